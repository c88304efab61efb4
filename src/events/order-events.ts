import type { Transaction } from 'kysely';
import type { Database, OrderEventRow, OrderRow, OrderStatus } from '../db/schema.ts';

export type OrderEventType = 'order.created' | 'order.status_changed';
export const ORDER_EVENT_TYPES: readonly OrderEventType[] = ['order.created', 'order.status_changed'];

/** The kinds of message a subscription receives: v2 adds `order.cancelled` to a cancelling status change. */
export type WebhookEventKind = OrderEventType | 'order.cancelled';
export const WEBHOOK_EVENT_KINDS: Record<'v1' | 'v2', readonly WebhookEventKind[]> = {
  v1: ORDER_EVENT_TYPES,
  v2: [...ORDER_EVENT_TYPES, 'order.cancelled'],
};

/** A status as an API version names it: v1 has no `cancelled` and reads such an order as `failed`. */
export function statusIn(version: 'v1' | 'v2', status: OrderStatus): OrderStatus {
  return version === 'v1' && status === 'cancelled' ? 'failed' : status;
}

/** The failure reason of a cancelled order as v1 reads it (as failed). */
export const V1_CANCELLED_REASON = 'CANCELLED';

/** An event as the listeners get it, with what the order is about (fixed when it was placed). */
export interface OrderEventOf {
  event: OrderEventRow;
  order: Pick<OrderRow, 'id' | 'source' | 'external_id'>;
}

/** Acts on committed events in the publishing job's transaction: its writes commit with their mark as published or not at all. */
type OrderEventListener = { react: (trx: Transaction<Database>, events: readonly OrderEventOf[]) => Promise<void> };

/** The seam between orders and the modules that react to them (neither imports the other): the publishing job hands the outbox's rows here. */
export class OrderEventBus {
  private readonly listeners: OrderEventListener[] = [];

  subscribe(listener: OrderEventListener): void {
    this.listeners.push(listener);
  }

  /** One call hands over a whole pass of unpublished events, each order's in sequence. */
  async publish(trx: Transaction<Database>, events: readonly OrderEventOf[]): Promise<void> {
    if (events.length === 0) return;
    for (const listener of this.listeners) await listener.react(trx, events);
  }
}
