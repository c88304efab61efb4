import type { Transaction } from 'kysely';
import type { Database, OrderEventRow, OrderRow } from '../db/schema.ts';

export type OrderEventType = 'order.created' | 'order.status_changed';
export const ORDER_EVENT_TYPES: readonly OrderEventType[] = ['order.created', 'order.status_changed'];

/**
 * Acts on an order event inside the transaction that wrote it (and the change behind it): what it
 * writes or enqueues commits with the change, or not at all. `order` is the order as it is after
 * the change.
 */
export type OrderEventListener = (trx: Transaction<Database>, event: OrderEventRow, order: OrderRow) => Promise<void>;

/**
 * The seam between orders and the modules that react to them. The orders module writes one numbered
 * `order_events` row per creation and status change, in the changing transaction, and publishes it
 * here; outgoing webhooks fan it out to subscriptions and inbound webhooks report a platform order's
 * outcome, in that same transaction. Neither side imports the other.
 */
export class OrderEventBus {
  private readonly listeners: OrderEventListener[] = [];

  subscribe(listener: OrderEventListener): void {
    this.listeners.push(listener);
  }

  async publish(trx: Transaction<Database>, event: OrderEventRow, order: OrderRow): Promise<void> {
    for (const listener of this.listeners) await listener(trx, event, order);
  }
}
