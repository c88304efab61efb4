import { sql, type RawBuilder, type Transaction } from 'kysely';
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

/** An order as a change left it, and the event the change wrote. */
export interface OrderEventOf {
  event: OrderEventRow;
  order: OrderRow;
}

/**
 * Acts on order events inside the transaction that wrote them (and the changes behind them): what
 * it writes or enqueues commits with the changes, or not at all. One call gets every event of one
 * statement (a batch of orders processed together), so a listener can act on all of them at once.
 *
 * `read`, when given, is what the listener needs to know about the events' orders: a query over
 * `owners` (a subquery of the orders' owners' ids) that runs inside the statement writing the
 * events, so it costs no round trip of its own; its rows reach `react` as `rows`.
 */
export interface OrderEventListener<R = unknown> {
  read?: (owners: RawBuilder<unknown>) => RawBuilder<R>;
  react: (trx: Transaction<Database>, changes: readonly OrderEventOf[], rows: readonly R[]) => Promise<void>;
}

/**
 * The seam between orders and the modules that react to them. The orders module writes one numbered
 * `order_events` row per creation and status change, in the changing transaction, and publishes it
 * here; outgoing webhooks fan it out to subscriptions and inbound webhooks report a platform order's
 * outcome, in that same transaction. Neither side imports the other.
 */
export class OrderEventBus {
  private readonly listeners: OrderEventListener[] = [];

  subscribe<R>(listener: OrderEventListener<R>): void {
    this.listeners.push(listener as OrderEventListener);
  }

  /**
   * Every listener's `read`, as one JSON array (one element per listener, each the array of its
   * rows): a column for the statement that writes the events, whose value goes to `publish`.
   */
  reads(owners: RawBuilder<unknown>): RawBuilder<unknown[][]> {
    const each = this.listeners.map((l) => (l.read ? sql`coalesce((SELECT json_agg(r) FROM (${l.read(owners)}) AS r), '[]'::json)` : sql`'[]'::json`));
    return each.length === 0 ? sql`'[]'::json` : sql`json_build_array(${sql.join(each)})`;
  }

  /** Runs every listener on `changes`, with `rows`, the value of the writing statement's `reads` column. */
  async publish(trx: Transaction<Database>, changes: readonly OrderEventOf[], rows: readonly unknown[][]): Promise<void> {
    if (changes.length === 0) return;
    for (const [i, listener] of this.listeners.entries()) await listener.react(trx, changes, rows[i] ?? []);
  }
}
