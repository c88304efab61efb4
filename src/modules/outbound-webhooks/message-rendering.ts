import crypto from 'node:crypto';
import type { OrderEventRow, WebhookSubscriptionRow } from '../../db/schema.ts';
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

/** A new `webhook.test` message to `subscription`: its id and body. */
export function testMessage(subscription: Pick<WebhookSubscriptionRow, 'id'>): { messageId: string; payload: string } {
  const id = crypto.randomBytes(12).toString('hex');
  const payload = JSON.stringify({
    id: `evt_test_${id}`,
    type: WEBHOOK_TEST_EVENT,
    timestamp: new Date().toISOString(),
    data: { subscription_id: subscription.id, message: 'This is a test event.' },
  });
  return { messageId: `msg_test_${id}`, payload };
}
