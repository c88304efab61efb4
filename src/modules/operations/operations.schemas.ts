import { Type } from 'typebox';
import { NullableText, NullableTimestamp, Timestamp } from '../../http/common.schemas.ts';
import { InboundWebhookSummary } from '../inbound-webhooks/inbound-webhooks.schemas.ts';
import type { ApiVersion } from '../../http/api-version.ts';
import { orderSchemas } from '../orders/orders.schemas.ts';

const TraceJob = Type.Object({
  id: Type.String({ description: "the job queue's id of the job" }),
  queue: Type.String({ description: 'e.g. `webhook-inbound-process`, `order-process`, `webhook-deliver`, `webhook-platform-report`, or a `…-dead-letter` queue' }),
  state: Type.Union(
    [Type.Literal('created'), Type.Literal('retry'), Type.Literal('active'), Type.Literal('completed'), Type.Literal('cancelled'), Type.Literal('failed')],
    { description: '`created` and `retry`: waiting; `active`: running; `completed`, `cancelled`, `failed`: finished' },
  ),
  attempt_count: Type.Integer({ description: 'attempts started so far' }),
  created_at: Timestamp,
  started_at: NullableTimestamp,
  finished_at: NullableTimestamp,
  last_error: NullableText('the error of its latest failed attempt; null when none or once it completed'),
});

const TraceAttempt = Type.Object({
  attempt: Type.Integer(),
  attempted_at: Timestamp,
  status_code: Type.Union([Type.Integer(), Type.Null()], { description: "the receiver's HTTP status; null when there was no answer" }),
  duration_ms: Type.Union([Type.Integer(), Type.Null()]),
  success: Type.Boolean(),
  error: NullableText('why the attempt failed'),
});

const TraceId = (description: string) =>
  Type.Union([Type.String({ pattern: '^[0-9a-f]{32}$' }), Type.Null()], { description, examples: ['4bf92f3577b34da6a3ce929d0e0e4736'] });

/** v1 keeps the two pending states it has always shown; v2 says `pending` for both, as the delivery log and message detail do. */
const TraceMessageStatus = {
  v1: Type.Union([Type.Literal('held'), Type.Literal('queued'), Type.Literal('delivered'), Type.Literal('failed')], {
    description: '`held`: waits for an earlier message of the order; `queued`: being delivered or retried; `delivered`; `failed`: every attempt failed',
  }),
  v2: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')], {
    description:
      '`pending`: being delivered, retried, or waiting for an earlier message of the order; `delivered`; `failed`: every attempt failed, ' +
      'or its subscription was disabled or deleted — the vocabulary of the delivery log and the message detail',
  }),
};

const TraceMessage = (version: ApiVersion) =>
  Type.Object({
    message_id: Type.String({ description: 'the `webhook-id` header of its deliveries' }),
    event_type: Type.String(),
    sequence: Type.Union([Type.Integer(), Type.Null()], { description: "the event's sequence in the order's history" }),
    status: TraceMessageStatus[version],
    trace_id: TraceId('the trace its deliveries belong to: that of the request or job that wrote its event; null when that was not traced'),
    attempts: Type.Array(TraceAttempt),
  });

/** The trace of one order, with the order and its events in `version`'s schemas. */
export const OrderTraceBody = (version: ApiVersion) => Type.Object(
  {
    order: orderSchemas[version].AdminOrderDetail,
    trace_id: TraceId(
      'the OpenTelemetry trace id of the request (or job) that created the order: search it in the tracing back end to see the ' +
        'request, its processing job and its deliveries (docs/tracing.md); null when tracing was off or the trace not sampled',
    ),
    inbound: Type.Array(InboundWebhookSummary, { description: 'the platform webhooks that created or were linked to the order, oldest first' }),
    events: orderSchemas[version].OrderEventList,
    jobs: Type.Array(TraceJob, {
      description:
        'every job run for the order, for those webhooks and for its outgoing messages (dead-letter copies included), oldest first; ' +
        'finished jobs are kept for JOB_RETENTION_DAYS',
    }),
    deliveries: Type.Array(
      Type.Object({ subscription_id: Type.Integer(), url: Type.String(), messages: Type.Array(TraceMessage(version)) }),
      { description: 'per subscription, each message of the order\'s events with every attempt; settled messages are kept for WEBHOOK_MESSAGE_RETENTION_DAYS' },
    ),
  },
  { description: 'The whole story of one order' },
);
