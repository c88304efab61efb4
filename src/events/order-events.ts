import { sql, type Expression, type Kysely, type Transaction } from 'kysely';
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

/**
 * Acts on an order event inside the transaction that wrote it (and the change behind it): what it
 * writes or enqueues commits with the change, or not at all. `order` is the order as it is after
 * the change. `looked` holds the rows of the listener's lookup, when it has one.
 */
export type OrderEventListener = (trx: Transaction<Database>, event: OrderEventRow, order: OrderRow, looked: readonly unknown[] | undefined) => Promise<void>;

/** What an event will be, known before the statement that writes it runs. */
export interface OrderEventPreview {
  type: OrderEventType;
  /** the order's status after the change */
  status: OrderStatus;
  /** the order's owner: its id, or SQL that reads it (when the statement is what finds the order) */
  userId: number | Expression<number>;
}

/**
 * A read a listener needs for every event: a SELECT the orders module runs inside the statement
 * that writes the event (the same transaction, that statement's snapshot) instead of as a round
 * trip of its own. Its rows reach the listener as `looked`, as JSON values.
 */
export type OrderEventLookup = (db: Kysely<Database>, preview: OrderEventPreview) => Expression<unknown>;

/**
 * When a listener acts, as far as the statement that writes an event can tell before the listener
 * runs. A listener that gives neither may act on any event.
 */
export interface ListenerScope {
  /**
   * false: the listener never acts on an event of this type and status, whatever the statement
   * reads. It is not told the owner: statements are compiled once per type and status (`shapeKey`).
   */
  actsOn?: (preview: Pick<OrderEventPreview, 'type' | 'status'>) => boolean;
  /** the listener acts only when its lookup finds a row (with no row, it writes and sends nothing) */
  onlyWithRows?: boolean;
}

/** Whether a listener of `scope` may act on an event of this type and status (its scope does not rule it out). */
function mayActOn(scope: ListenerScope, preview: Pick<OrderEventPreview, 'type' | 'status'>): boolean {
  return scope.actsOn === undefined || scope.actsOn(preview);
}

/** Buses made in this process, for `shapeKey` (tests make several). */
let buses = 0;

/**
 * The seam between orders and the modules that react to them. The orders module writes one numbered
 * `order_events` row per creation and status change, in the changing transaction, and publishes it
 * here; outgoing webhooks fan it out to subscriptions and inbound webhooks report a platform order's
 * outcome, in that same transaction. Neither side imports the other.
 */
export class OrderEventBus {
  private readonly listeners: { listener: OrderEventListener; lookup: OrderEventLookup | undefined; scope: ListenerScope }[] = [];
  private readonly id = ++buses;

  subscribe(listener: OrderEventListener, lookup?: OrderEventLookup, scope: ListenerScope = {}): void {
    this.listeners.push({ listener, lookup, scope });
  }

  /**
   * Names this bus and its listeners as they are now, for the key of a statement compiled once per
   * shape that embeds their lookups or `quietWhen`: a lookup's SQL depends on the listeners, and on
   * the preview only through its type, its status and its owner as a query parameter.
   */
  get shapeKey(): string {
    return `${this.id}.${this.listeners.length}`;
  }

  /** Whether `quietWhen` can tell for an event of this type and status (false: it gives undefined). */
  tellsQuiet(preview: Pick<OrderEventPreview, 'type' | 'status'>): boolean {
    return this.listeners.every(({ lookup, scope }) => !mayActOn(scope, preview) || (scope.onlyWithRows === true && lookup !== undefined));
  }

  /** Each listener's lookup for an event like `preview`, in subscription order (undefined: it has none). */
  lookups(db: Kysely<Database>, preview: OrderEventPreview): (Expression<unknown> | undefined)[] {
    return this.listeners.map((l) => l.lookup?.(db, preview));
  }

  /**
   * SQL that is true when no listener will act on an event like `preview` (each one's scope says it
   * does not, or its lookup finds no row), for the statement that writes the event to read in its
   * own snapshot: a change it holds for can commit on its own, with nothing to publish, and needs no
   * transaction around it for the listeners' writes. Undefined when a listener's scope cannot tell.
   */
  quietWhen(db: Kysely<Database>, preview: OrderEventPreview): Expression<boolean> | undefined {
    if (!this.tellsQuiet(preview)) return undefined;
    // each listener left has a lookup (tellsQuiet): it acts only when that finds a row
    const conditions = this.listeners.filter(({ scope }) => mayActOn(scope, preview)).map(({ lookup }) => sql<boolean>`NOT EXISTS (${lookup!(db, preview)})`);
    return conditions.length === 0 ? sql<boolean>`true` : sql<boolean>`(${sql.join(conditions, sql` AND `)})`;
  }

  /**
   * `looked`: the rows of `lookups(…)`, read by the statement that wrote `event`, in the same order.
   * Every publisher embeds the lookups: a listener with one always receives its rows.
   */
  async publish(trx: Transaction<Database>, event: OrderEventRow, order: OrderRow, looked: readonly (readonly unknown[] | null)[]): Promise<void> {
    for (const [i, { listener }] of this.listeners.entries()) await listener(trx, event, order, looked[i] ?? undefined);
  }
}
