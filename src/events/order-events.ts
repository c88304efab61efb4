import type { Transaction } from 'kysely';
import type { Database, OrderEventRow, OrderRow, OrderStatus } from '../db/schema.ts';

export type OrderEventType = 'order.created' | 'order.status_changed';
export const ORDER_EVENT_TYPES: readonly OrderEventType[] = ['order.created', 'order.status_changed'];

/**
 * The kinds of message a subscription can receive: one per order event of its type, and
 * `order.cancelled` as well for the status change that cancels an order (v2 only).
 */
export type WebhookEventKind = OrderEventType | 'order.cancelled';
export const WEBHOOK_EVENT_KINDS: Record<'v1' | 'v2', readonly WebhookEventKind[]> = {
  v1: ORDER_EVENT_TYPES,
  v2: [...ORDER_EVENT_TYPES, 'order.cancelled'],
};

/** A status as an API version names it: v1 has no `cancelled` and reads such an order as `failed`. */
export function statusIn(version: 'v1' | 'v2', status: OrderStatus): OrderStatus {
  return version === 'v1' && status === 'cancelled' ? 'failed' : status;
}

/**
 * The failure reason v1 gives a cancelled order (in its order reads and its subscriptions'
 * messages): such an order will not be fulfilled, so v1 reads it as failed, for this reason.
 */
export const V1_CANCELLED_REASON = 'CANCELLED';

/** An event as the listeners get it, with what the order is about (fixed when it was placed). */
export interface OrderEventOf {
  event: OrderEventRow;
  order: Pick<OrderRow, 'id' | 'source' | 'external_id'>;
}

/**
 * Acts on order events after the changes that wrote them committed, in the transaction of the
 * publishing job (`publishEvents`, orders module): what it writes or enqueues commits with the
 * events' mark as published, or not at all, and the events are handed over again. One call gets
 * every event of one pass (up to a few hundred, of many orders, oldest first; each order's in
 * sequence), so a listener can act on all of them at once.
 */
export interface OrderEventListener {
  react: (trx: Transaction<Database>, events: readonly OrderEventOf[]) => Promise<void>;
}

/**
 * The seam between orders and the modules that react to them. The orders module writes one numbered
 * `order_events` row per creation and status change, in the changing transaction; `order_events` is
 * the outbox: the publishing job reads the rows not yet published and hands them here, where
 * outgoing webhooks fan them out to subscriptions and inbound webhooks report a platform order's
 * outcome. Neither side imports the other.
 */
export class OrderEventBus {
  private readonly listeners: OrderEventListener[] = [];

  subscribe(listener: OrderEventListener): void {
    this.listeners.push(listener);
  }

  /** Runs every listener on `events`, in `trx`. */
  async publish(trx: Transaction<Database>, events: readonly OrderEventOf[]): Promise<void> {
    if (events.length === 0) return;
    for (const listener of this.listeners) await listener.react(trx, events);
  }
}
