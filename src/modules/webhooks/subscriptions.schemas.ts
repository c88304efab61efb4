import { Type, type Static } from 'typebox';
import { Id, NullableTimestamp, Page, PageQuery, Timestamp } from '../../http/common.schemas.ts';
import { ORDER_EVENT_TYPES } from '../orders/order-events.ts';

const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  description: 'delivery target: an https URL on a public address',
});
const EventKinds = Type.Array(Type.Union(ORDER_EVENT_TYPES.map((t) => Type.Literal(t))), {
  minItems: 1,
  maxItems: ORDER_EVENT_TYPES.length,
  uniqueItems: true,
  description: `event kinds: ${ORDER_EVENT_TYPES.join(', ')}`,
});
const Description = Type.Union([Type.String({ maxLength: 500 }), Type.Null()]);

export const Subscription = Type.Object({
  id: Type.Integer(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  description: Type.Union([Type.String(), Type.Null()]),
  is_active: Type.Boolean(),
  disabled_reason: Type.Union([Type.String(), Type.Null()], { description: 'why the service disabled it, if it did' }),
  created_at: Timestamp,
  updated_at: NullableTimestamp,
});

export const SubscriptionWithSecret = Type.Object({
  ...Subscription.properties,
  secret: Type.String({ description: 'signing secret (`whsec_…`); shown only on creation and rotation' }),
});

export const SubscriptionPage = Page(Subscription, 'A page of your webhook subscriptions, ordered by id');

export const SubscriptionCreateBody = Type.Object(
  { url: Url, events: EventKinds, description: Type.Optional(Description) },
  { additionalProperties: false },
);
export type SubscriptionCreateBody = Static<typeof SubscriptionCreateBody>;

export const SubscriptionUpdateBody = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(EventKinds),
    description: Type.Optional(Description),
    is_active: Type.Optional(Type.Boolean({ description: 'true re-enables a disabled subscription' })),
  },
  { additionalProperties: false },
);
export type SubscriptionUpdateBody = Static<typeof SubscriptionUpdateBody>;

export const SubscriptionIdParams = Type.Object({ subscription_id: Id });

export const SubscriptionListQuery = Type.Object({ ...PageQuery });
export type SubscriptionListQuery = Static<typeof SubscriptionListQuery>;

export const Delivery = Type.Object({
  id: Type.Integer(),
  event_id: Type.Union([Type.Integer(), Type.Null()]),
  event_type: Type.String(),
  message_id: Type.String({ description: 'the `webhook-id` header; the same for every attempt of one message' }),
  attempt: Type.Integer(),
  status_code: Type.Union([Type.Integer(), Type.Null()]),
  duration_ms: Type.Union([Type.Integer(), Type.Null()]),
  success: Type.Boolean(),
  error: Type.Union([Type.String(), Type.Null()]),
  created_at: Timestamp,
});

export const DeliveryPage = Page(Delivery, 'Delivery attempts, newest first');

export const TestQueued = Type.Object({
  status: Type.String(),
  message: Type.String(),
  message_id: Type.String(),
});
