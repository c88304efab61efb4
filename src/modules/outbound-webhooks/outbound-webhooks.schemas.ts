import { Type, type Static, type TProperties, type TSchema, type TSchemaOptions } from 'typebox';
import type { ApiVersion } from '../../http/api-version.ts';
import { CappedPage, IdOf, NullableTimestamp, Page, PageQuery, Timestamp } from '../../http/common.schemas.ts';
import { MAX_ID } from '../../http/path-ids.ts';
import { WEBHOOK_EVENT_KINDS } from '../../events/order-events.ts';
import { WEBHOOK_TEST_EVENT } from './message-rendering.ts';

/** How long the previous secret keeps signing after a rotation, unless the caller says otherwise. */
export const DEFAULT_SECRET_OVERLAP_SECONDS = 86400;
const MAX_SECRET_OVERLAP_SECONDS = 7 * 86400;

const Url = Type.String({
  format: 'uri',
  minLength: 1,
  maxLength: 2048,
  description: 'delivery target: an https URL on a public address',
});
const Description = Type.Union([Type.String({ maxLength: 500 }), Type.Null()]);
/** A body that may be absent (null), else these properties and no other. */
const optionalBody = <P extends TProperties>(properties: P, options: TSchemaOptions) =>
  Type.Union([Type.Object(properties, { additionalProperties: false }), Type.Null()], options);
const MessageState = Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')], {
  description:
    'pending: being delivered, retried, or waiting for an earlier message of its order; delivered; ' +
    'failed: every attempt failed, or its subscription was disabled or deleted while it was pending' },
);

/** The subscription schemas of one API version (v2 adds `order.cancelled` and `api_version`); bodies are typed as v2's, a superset. */
function buildSubscriptionSchemas(version: ApiVersion) {
  const kinds = WEBHOOK_EVENT_KINDS[version];
  const EventKinds = Type.Array(Type.Union(kinds.map((t) => Type.Literal(t))), {
    minItems: 1,
    maxItems: kinds.length,
    uniqueItems: true,
    description: `event kinds: ${kinds.join(', ')}`,
  });
  const Subscription = Type.Object({
    id: Type.Integer(),
    url: Type.String(),
    events: Type.Array(Type.String()),
    description: Type.Union([Type.String(), Type.Null()]),
    is_active: Type.Boolean(),
    disabled_reason: Type.Union([Type.String(), Type.Null()], { description: 'why the service disabled it, if it did' }),
    disabled_at: { ...NullableTimestamp, description: 'when it was disabled, by the service or by you; null while active' },
    previous_secret_expires_at: {
      ...NullableTimestamp,
      description: 'until then deliveries also carry the signature of the secret before the last rotation; null when they carry only the current one',
    },
    ...(version === 'v2'
      ? {
          api_version: Type.Union([Type.Literal('v1'), Type.Literal('v2')], {
            description: 'the API version it was created under: its messages are rendered as that version renders orders',
          }),
        }
      : {}),
    created_at: Timestamp,
    updated_at: NullableTimestamp,
  });
  const DeliveryEventType = Type.Union([...kinds, WEBHOOK_TEST_EVENT].map((t) => Type.Literal(t)));
  return {
    Subscription: Subscription as TSchema,
    SubscriptionWithSecret: Type.Object({
      ...Subscription.properties,
      secret: Type.String({ description: 'signing secret (`whsec_…`); shown only on creation and rotation' }),
    }) as TSchema,
    SubscriptionPage: Page(Subscription, 'A page of your webhook subscriptions, ordered by id') as TSchema,
    SubscriptionCreateBody: Type.Object(
      { url: Url, events: EventKinds, description: Type.Optional(Description) },
      {
        additionalProperties: false,
        examples: [{ url: 'https://example.com/webhooks/orders', events: ['order.status_changed'], description: 'Order updates for the warehouse' }],
      },
    ),
    SubscriptionUpdateBody: Type.Object(
      {
        url: Type.Optional(Url),
        events: Type.Optional(
          version === 'v2'
            ? { ...EventKinds, description: `event kinds: ${kinds.join(', ')}; a subscription created under v1 (\`api_version\` v1) cannot add \`order.cancelled\` (422 \`VALIDATION_ERROR\`)` }
            : EventKinds,
        ),
        description: Type.Optional(Description),
        is_active: Type.Optional(Type.Boolean({ description: 'true re-enables a disabled subscription' })),
      },
      { additionalProperties: false, examples: [{ description: 'Order updates for the warehouse team' }] },
    ),
    DeliveryListQuery: Type.Object({
      ...PageQuery,
      status: Type.Optional({ ...MessageState, description: 'attempts whose message is now in this state' }),
      event_type: Type.Optional(DeliveryEventType),
      order_id: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_ID, description: 'attempts of the messages of this order' })),
    }),
    MessageListQuery: Type.Object({
      ...PageQuery,
      status: Type.Optional({ ...MessageState, description: 'only messages now in this state' }),
      event_type: Type.Optional({ ...DeliveryEventType, description: 'only messages of this event type' }),
    }),
    TestBody: optionalBody(
      {
        event_type: Type.Optional({
          ...DeliveryEventType,
          default: WEBHOOK_TEST_EVENT,
          description: 'the type to send a sample of (GET /api/v2/webhooks/event-types shows each sample); a v1 subscription cannot be sent `order.cancelled`',
        }),
      },
      { description: 'optional: no body sends `webhook.test`', examples: [{ event_type: 'order.status_changed' }] },
    ),
  };
}

export const SUBSCRIPTION_SCHEMAS = { v1: buildSubscriptionSchemas('v1'), v2: buildSubscriptionSchemas('v2') };

export type SubscriptionCreateBody = Static<ReturnType<typeof buildSubscriptionSchemas>['SubscriptionCreateBody']>;
export type SubscriptionUpdateBody = Static<ReturnType<typeof buildSubscriptionSchemas>['SubscriptionUpdateBody']>;
export type DeliveryListQuery = Static<ReturnType<typeof buildSubscriptionSchemas>['DeliveryListQuery']>;
export type MessageListQuery = Static<ReturnType<typeof buildSubscriptionSchemas>['MessageListQuery']>;
export type TestBody = Static<ReturnType<typeof buildSubscriptionSchemas>['TestBody']>;

export const SubscriptionIdParams = Type.Object({ subscription_id: IdOf(1) });

export const SubscriptionListQuery = Type.Object({ ...PageQuery });

const ResponseBody = Type.Union([Type.String(), Type.Null()], { description: 'the first KiB of the response body; null when no response came' });
const AttemptError = Type.Union([Type.String(), Type.Null()], {
  description: 'why the attempt failed: `HTTP <status>: <start of the body>`, or a reason such as "timeout after 15 s", "connection refused", "host not found", "target address not allowed"',
});

export const Delivery = Type.Object({
  id: Type.Integer(),
  event_id: Type.Union([Type.Integer(), Type.Null()]),
  event_type: Type.String(),
  order_id: Type.Union([Type.Integer(), Type.Null()], { description: 'the order of the event; null for a test event' }),
  message_id: Type.String({ description: 'the `webhook-id` header; the same for every attempt of one message' }),
  message_status: Type.Union([MessageState, Type.Null()], { description: 'the state of the message now' }),
  attempt: Type.Integer(),
  status_code: Type.Union([Type.Integer(), Type.Null()]),
  duration_ms: Type.Union([Type.Integer(), Type.Null()]),
  success: Type.Boolean(),
  error: AttemptError,
  created_at: Timestamp,
});

export const DeliveryPage = Page(Delivery, 'Delivery attempts, newest first');

export const MessageIdParams = Type.Object({
  subscription_id: IdOf(1),
  message_id: Type.String({
    pattern: '^msg_[A-Za-z0-9_]+$',
    maxLength: 100,
    description: 'the message id (`webhook-id` header, `msg_…`): the `message_id` of a delivery',
    examples: ['msg_2tR9ZqW1yK0bX4mE7pLs3Jd'],
  }),
});

const SentHeaders = Type.Record(Type.String(), Type.String(), {
  description: 'the request headers, `webhook-signature` included (every `v1,` entry sent)',
});

const AttemptSummary = Type.Object({
  attempt: Type.Integer({ description: 'counts every attempt of the message, resends and recoveries included' }),
  created_at: Timestamp,
  status_code: Type.Union([Type.Integer(), Type.Null()], { description: 'null when no response came' }),
  duration_ms: Type.Union([Type.Integer(), Type.Null()]),
  success: Type.Boolean(),
  error: AttemptError,
});

export const MessageAttempt = Type.Object({
  ...AttemptSummary.properties,
  response_body: ResponseBody,
  headers: Type.Union([SentHeaders, Type.Null()]),
});

export const Message = Type.Object({
  message_id: Type.String({ description: 'the `webhook-id` header' }),
  subscription_id: Type.Integer(),
  event_id: Type.Union([Type.Integer(), Type.Null()]),
  event_type: Type.String(),
  order_id: Type.Union([Type.Integer(), Type.Null()]),
  status: MessageState,
  body: Type.String({ description: 'the exact request body, as signed and sent' }),
  headers: Type.Union([SentHeaders, Type.Null()], { description: 'the headers of the latest attempt; null before the first' }),
  created_at: Timestamp,
  settled_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'when it was delivered or failed for good' }),
  attempts: Type.Array(MessageAttempt, { description: 'every attempt, oldest first' }),
});

const Queued = { status: Type.String(), message: Type.String() };
export const MessageQueued = Type.Object({ ...Queued, message_id: Type.String() });

export const RotateSecretBody = optionalBody(
  {
    overlap_seconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_SECRET_OVERLAP_SECONDS,
        default: DEFAULT_SECRET_OVERLAP_SECONDS,
        description: 'how long the replaced secret keeps signing beside the new one (0: not at all)',
      }),
    ),
  },
  { description: 'optional: no body keeps the replaced secret signing for the default overlap', examples: [{ overlap_seconds: 3600 }] },
);

export const RecoverBody = Type.Object(
  { since: Type.String({ format: 'date-time', maxLength: 64, description: 'ISO 8601 date and time with a time zone: messages that failed for good at or after it are queued again' }) },
  { additionalProperties: false, examples: [{ since: '2026-01-01T00:00:00Z' }] },
);

export const RecoverQueued = Type.Object({
  ...Queued,
  queued: Type.Integer({ description: 'how many messages were queued again' }),
  since: Timestamp,
});

export const MessageSummary = Type.Object({
  message_id: Type.String({ description: 'the `webhook-id` header' }),
  event_id: Type.Union([Type.Integer(), Type.Null()], { description: 'null for a test send' }),
  event_type: Type.String(),
  order_id: Type.Union([Type.Integer(), Type.Null()], { description: 'the order of the event; null for a test send' }),
  status: MessageState,
  created_at: Timestamp,
  settled_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'when it was delivered or failed for good' }),
  attempts: Type.Array(AttemptSummary, { description: 'every attempt, oldest first (the body, headers and answers: GET …/messages/{message_id})' }),
});

export const MessagePage = CappedPage(MessageSummary, "A page of the subscription's messages, newest first, each with its attempts");

const StatsBucket = Type.Union([Type.Literal('hour'), Type.Literal('day')], { description: 'UTC hours or days', default: 'hour' });
export const StatsQuery = Type.Object({
  bucket: Type.Optional({ ...StatsBucket, examples: ['hour'] }),
  from: Type.Optional(Type.String({ format: 'date-time', maxLength: 64, description: 'default: `to` − 24 h (hour) or − 30 days (day); aligned down to its bucket' })),
  to: Type.Optional(Type.String({ format: 'date-time', maxLength: 64, description: 'default: now; the range ends before it' })),
});
export type StatsQuery = Static<typeof StatsQuery>;

const SuccessRate = Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()], { description: 'succeeded / (succeeded + failed); null when there was no attempt' });
const StatsCounts = {
  succeeded: Type.Integer({ description: 'attempts the receiver answered with 2xx' }),
  failed: Type.Integer({ description: 'attempts that failed (an answer other than 2xx, or none)' }),
  success_rate: SuccessRate,
};
export const SubscriptionStats = Type.Object({
  subscription_id: Type.Integer(),
  bucket: StatsBucket,
  from: Timestamp,
  to: Timestamp,
  ...StatsCounts,
  buckets: Type.Array(Type.Object({ start: Timestamp, ...StatsCounts }), { description: 'every bucket of the range, oldest first, zeros included' }),
});

export const EventTypeList = Type.Object({
  items: Type.Array(
    Type.Object({
      name: Type.String({ examples: ['order.status_changed'] }),
      description: Type.String(),
      schema: Type.Unknown({ description: 'the JSON Schema of the message body as a v2 subscription receives it' }),
      example: Type.Unknown({ description: 'a sample body, rendered as real messages are' }),
    }),
  ),
});
