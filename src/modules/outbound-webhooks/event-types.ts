import { Type, type TSchema } from 'typebox';
import { WEBHOOK_EVENT_KINDS } from '../../events/order-events.ts';
import { sampleEnvelope, WEBHOOK_TEST_EVENT, type WebhookEventType } from './message-rendering.ts';

/** The event-type catalogue (decision 145): each type's meaning, the schema of its v2 body, and a sample rendered as real messages are. */
const Status = Type.Enum(['pending', 'processing', 'completed', 'failed', 'cancelled']);
const orderData = (extra: Record<string, TSchema>) =>
  Type.Object({
    order_id: Type.Integer({ minimum: 1 }),
    user_id: Type.Integer({ minimum: 1, description: 'the owner of the order' }),
    previous_status: Type.Union([Status, Type.Null()], { description: 'null for a new order' }),
    status: Status,
    total_amount: Type.Number({ description: 'the order total, in the CURRENCY setting' }),
    sequence: Type.Integer({ minimum: 1, description: "the event's number among its order's events, from 1: a receiver applies an order's events in this order" }),
    ...extra,
  });
const envelope = (type: WebhookEventType, data: TSchema) =>
  Type.Object({
    id: Type.String({ pattern: '^evt_', description: 'the event id; the same in every attempt and resend' }),
    type: Type.Literal(type),
    timestamp: Type.String({ format: 'date-time', description: 'when the event happened' }),
    data,
  });

const CATALOGUE: Record<WebhookEventType, { description: string; schema: TSchema }> = {
  'order.created': {
    description: 'An order was placed (through the API or from a platform webhook); its status is `pending`.',
    schema: envelope('order.created', orderData({})),
  },
  'order.status_changed': {
    description:
      'An order moved to another status. A move to `failed` carries `reason` (`INSUFFICIENT_STOCK`, `PRODUCT_UNAVAILABLE`, ' +
      '`TOTAL_TOO_LARGE` or `PROCESSING_ERROR`) and `details` (for `INSUFFICIENT_STOCK`: the short lines, else null); a move to ' +
      "`cancelled` carries the reason given (or null). A subscription created under API v1 receives a cancellation as a move to " +
      '`failed` with `reason` `CANCELLED`.',
    schema: envelope(
      'order.status_changed',
      orderData({
        reason: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'only on a move to `failed` or `cancelled`' })),
        details: Type.Optional(Type.Union([Type.Object({}), Type.Null()], { description: 'only on a move to `failed`' })),
      }),
    ),
  },
  'order.cancelled': {
    description: 'An order was cancelled (API v2 subscriptions only), sent beside its `order.status_changed`.',
    schema: envelope('order.cancelled', orderData({ reason: Type.Union([Type.String(), Type.Null()], { description: 'the reason given, or null' }) })),
  },
  [WEBHOOK_TEST_EVENT]: {
    description: 'Sent by "Send a test event" (POST …/test without an `event_type`), to check that the endpoint receives and verifies deliveries.',
    schema: envelope(WEBHOOK_TEST_EVENT, Type.Object({ subscription_id: Type.Integer(), message: Type.String() })),
  },
};

/** Every type a v2 subscription can be sent, in the catalogue's order. */
const EVENT_TYPES: readonly WebhookEventType[] = [...WEBHOOK_EVENT_KINDS.v2, WEBHOOK_TEST_EVENT];

export function eventTypeCatalogue() {
  return EVENT_TYPES.map((name) => ({ name, ...CATALOGUE[name], example: sampleEnvelope(name, 'v2') }));
}

/** The schema of a type's body (tests check real messages against it). */
export function eventTypeSchema(type: WebhookEventType): TSchema {
  return CATALOGUE[type].schema;
}
