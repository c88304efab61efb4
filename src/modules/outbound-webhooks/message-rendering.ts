import crypto from 'node:crypto';
import type { OrderEventRow } from '../../db/schema.ts';
import type { WebhookSubscriptionRow } from './outbound-webhooks.tables.ts';
import { statusIn, V1_CANCELLED_REASON, type WebhookEventKind } from '../../events/order-events.ts';
import type { ApiVersion } from '../../http/api-version.ts';
import { iso } from '../../http/common.schemas.ts';

export const WEBHOOK_TEST_EVENT = 'webhook.test';

/** The envelope of an order event as `version` renders it; a move to `failed` or `cancelled` carries its reason. */
export function orderEventEnvelope(event: OrderEventRow, kind: WebhookEventKind, version: ApiVersion) {
  const status = statusIn(version, event.status);
  const reason = event.status === 'cancelled' && version === 'v1' ? V1_CANCELLED_REASON : event.reason;
  return {
    id: kind === event.type ? `evt_${event.id}` : `evt_${event.id}_${kind.slice('order.'.length)}`,
    type: kind,
    timestamp: iso(event.created_at),
    data: {
      order_id: event.order_id,
      user_id: event.user_id,
      previous_status: event.previous_status === null ? null : statusIn(version, event.previous_status),
      status,
      total_amount: Number(event.total_amount),
      sequence: event.sequence,
      ...(status === 'failed' ? { reason, details: event.details ?? null } : {}),
      ...(status === 'cancelled' ? { reason } : {}),
    },
  };
}

/** The kinds of message an order event makes: its own type, and `order.cancelled` for a cancellation. */
export function kindsOf(event: Pick<OrderEventRow, 'type' | 'status'>): WebhookEventKind[] {
  const own = event.type as WebhookEventKind;
  return event.type === 'order.status_changed' && event.status === 'cancelled' ? [own, 'order.cancelled'] : [own];
}

/** Stable across every retry of one event (of one kind) to one subscription. */
export function messageIdFor(eventId: number, subscriptionId: number, kind: WebhookEventKind, eventType: string): string {
  return kind === eventType ? `msg_${eventId}_${subscriptionId}` : `msg_${eventId}_${subscriptionId}_${kind.slice('order.'.length)}`;
}

/** Every type of message a subscription can be sent: the order event kinds and the test event. */
export type WebhookEventType = WebhookEventKind | typeof WEBHOOK_TEST_EVENT;

const SAMPLE_TIME = new Date('2026-01-15T10:30:00.000Z');
const sampleEvent = (e: Pick<OrderEventRow, 'id' | 'type' | 'previous_status' | 'status' | 'sequence'> & Partial<OrderEventRow>): OrderEventRow => ({
  order_id: 1001,
  user_id: 42,
  total_amount: '59.97',
  reason: null,
  details: null,
  created_at: SAMPLE_TIME,
  published: true,
  traceparent: null,
  ...e,
});

/** The order events the samples render: the event-type catalogue's examples and a test send of an order event. */
const SAMPLE_EVENTS: Record<WebhookEventKind, OrderEventRow> = {
  'order.created': sampleEvent({ id: 101, type: 'order.created', previous_status: null, status: 'pending', sequence: 1 }),
  'order.status_changed': sampleEvent({
    id: 103,
    type: 'order.status_changed',
    previous_status: 'processing',
    status: 'failed',
    sequence: 3,
    reason: 'INSUFFICIENT_STOCK',
    details: { lines: [{ product_id: 7, requested: 3, available: 1 }] },
  }),
  'order.cancelled': sampleEvent({ id: 102, type: 'order.status_changed', previous_status: 'pending', status: 'cancelled', sequence: 2, reason: 'The customer ordered the wrong size' }),
};

/** A sample message of `type` as a subscription of `version` receives it, rendered by the code that renders real ones. */
export function sampleEnvelope(type: WebhookEventType, version: ApiVersion, subscriptionId = 1) {
  if (type !== WEBHOOK_TEST_EVENT) return orderEventEnvelope(SAMPLE_EVENTS[type], type, version);
  return { id: 'evt_test_5f2b9c0d1e7a3b4c6d8e9f01', type, timestamp: iso(SAMPLE_TIME), data: { subscription_id: subscriptionId, message: 'This is a test event.' } };
}

/** A new test message of `type` (default `webhook.test`) to `subscription`: its id and body (a sample, with its own id and the time now). */
export function testMessage(
  subscription: Pick<WebhookSubscriptionRow, 'id' | 'api_version'>,
  type: WebhookEventType = WEBHOOK_TEST_EVENT,
): { messageId: string; payload: string } {
  const id = crypto.randomBytes(12).toString('hex');
  const sample = sampleEnvelope(type, subscription.api_version, subscription.id);
  const payload = JSON.stringify({ ...sample, id: `evt_test_${id}`, timestamp: new Date().toISOString() });
  return { messageId: `msg_test_${id}`, payload };
}
