import { sql, type Transaction } from 'kysely';
import type { Database, OrderEventRow, OrderStatus } from '../../db/schema.ts';

export type OrderEventType = 'order.created' | 'order.status_changed';
export const ORDER_EVENT_TYPES: readonly OrderEventType[] = ['order.created', 'order.status_changed'];

export interface OrderEventInput {
  orderId: number;
  userId: number;
  type: OrderEventType;
  previousStatus: OrderStatus | null;
  status: OrderStatus;
  totalAmount: string | number;
}

/** Runs inside the transaction that wrote the event (e.g. to enqueue webhook deliveries). */
export type OrderEventListener = (trx: Transaction<Database>, event: OrderEventRow) => Promise<void>;

/**
 * The outbox of order changes. Every order creation and status change writes one `order_events`
 * row, numbered per order (`sequence` 1, 2, 3 …), in the same transaction as the change; listeners
 * (the outgoing-webhook module) act on it in that same transaction, so an event can never be lost
 * or exist without its change.
 */
export class OrderEventBus {
  private readonly listeners: OrderEventListener[] = [];

  subscribe(listener: OrderEventListener): void {
    this.listeners.push(listener);
  }

  /** Callers hold the order row's lock (or just created it), so the sequence cannot race. */
  async record(trx: Transaction<Database>, input: OrderEventInput): Promise<OrderEventRow> {
    const event = await trx
      .insertInto('order_events')
      .values({
        order_id: input.orderId,
        user_id: input.userId,
        type: input.type,
        previous_status: input.previousStatus,
        status: input.status,
        total_amount: input.totalAmount,
        sequence: sql<number>`(SELECT coalesce(max(sequence), 0) + 1 FROM order_events WHERE order_id = ${input.orderId})`,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    for (const listener of this.listeners) await listener(trx, event);
    return event;
  }
}
