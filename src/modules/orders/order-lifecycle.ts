import type { Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database, OrderRow, OrderStatus } from '../../db/schema.ts';
import type { OrderEventBus } from '../../events/order-events.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import { changeStock, lockProducts, type ProductState } from '../products/products.repository.ts';
import { countStatusChanges } from './orders.metrics.ts';
import { changeStatuses, insertOrder, markPublished, orderDemand, unpublishedEvents, type LinePrice, type NewOrder, type StatusChange } from './orders.changes.repository.ts';

/**
 * Every change of an order, one function each, each in the caller's transaction: the change and its
 * event commit together. Once the transaction has committed, its owner calls `committed` (or runs
 * it through `inOrderTransaction`): the status counters count what it changed, and the publishing
 * job (`publishEvents`) is woken to hand the events, the `order_events` outbox, to the listeners.
 */
export const PUBLISH_QUEUE = 'order-events-publish';

/** The orders each open transaction changed; a rolled-back transaction's go with it, uncounted. */
const changedIn = new WeakMap<Transaction<Database>, OrderRow[]>();

function changedInTransaction(trx: Transaction<Database>, orders: readonly OrderRow[]): void {
  if (orders.length === 0) return;
  const list = changedIn.get(trx);
  if (list) list.push(...orders);
  else changedIn.set(trx, [...orders]);
}

/** After `trx` has committed: counts the status changes it made and, if it made any, wakes the publishing job. */
export function committed(trx: Transaction<Database>, queue: JobQueue): void {
  const changed = changedIn.get(trx);
  if (!changed) return;
  changedIn.delete(trx);
  countStatusChanges(changed);
  queue.wake(PUBLISH_QUEUE);
}

/** Runs `change` in a transaction of its own and calls `committed` once it has committed. */
export async function inOrderTransaction<T>(db: Db, queue: JobQueue, change: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  let ran: Transaction<Database> | undefined;
  const result = await db.transaction().execute((trx) => {
    ran = trx;
    return change(trx);
  });
  committed(ran!, queue);
  return result;
}

/** The statuses an order can be cancelled from: not yet final, or completed (its stock goes back). */
export const CANCELLABLE: readonly OrderStatus[] = ['pending', 'processing', 'completed'];

/**
 * Places a pending order with its lines, its `order.created` event and its processing job. `order`
 * is undefined, and nothing is written, when a line's product is unknown or inactive; `products`
 * are those found.
 */
export async function placeOrder(trx: Transaction<Database>, queue: JobQueue, input: NewOrder): Promise<{ order: OrderRow | undefined; products: ProductState[] }> {
  const { order, products } = await insertOrder(trx, input);
  if (!order) return { order: undefined, products };
  await queue.send(trx, 'order-process', { orderId: order.id });
  changedInTransaction(trx, [order]);
  return { order, products };
}

/**
 * Moves orders from one status to another (`changeStatuses`: those still in their `from` status),
 * with their events, in `trx`; completed orders' lines take `linePrices`. Returns the orders moved.
 */
export async function changeOrders(
  trx: Transaction<Database>,
  changes: readonly StatusChange[],
  linePrices: readonly LinePrice[] = [],
): Promise<OrderRow[]> {
  const changed = await changeStatuses(trx, changes, linePrices);
  changedInTransaction(trx, changed);
  return changed;
}

/** `changeOrders` for one order; undefined when it was no longer in `change.from`. */
export async function changeOrder(trx: Transaction<Database>, change: StatusChange): Promise<OrderRow | undefined> {
  const [changed] = await changeOrders(trx, [change]);
  return changed;
}

/**
 * Cancels an order locked with `lockOrder` (the caller checked it is `CANCELLABLE`). A completed
 * order's units go back to stock; a pending or processing one has reserved nothing, and its
 * processing re-reads the status under the same row lock, so never reserves it afterwards.
 */
export async function cancelOrder(trx: Transaction<Database>, order: OrderRow, reason: string | null): Promise<OrderRow> {
  if (order.status === 'completed') {
    const demand = await orderDemand(trx, order.id);
    // the lock order: the order row, then its products by id (docs/architecture.md, Locks)
    await lockProducts(trx, demand.map((d) => d.productId));
    await changeStock(trx, demand.map((d) => ({ productId: d.productId, delta: d.quantity })));
  }
  const cancelled = await changeOrder(trx, { id: order.id, from: order.status, to: 'cancelled', reason });
  if (!cancelled) throw new Error(`order ${order.id}: not ${order.status} under its lock`);
  return cancelled;
}

/** Events handed to the listeners per transaction of the publishing job. */
const PUBLISH_BATCH = 200;

/**
 * The publishing job: hands the unpublished events to the listeners, oldest first, and marks them
 * published in the same transaction, so the listeners act on each once: a failure rolls back what
 * they wrote with the mark, and a later job hands the events over again. Returns how many.
 */
export async function publishEvents(db: Db, orderEvents: OrderEventBus): Promise<number> {
  let published = 0;
  for (;;) {
    const n = await db.transaction().execute(async (trx) => {
      const events = await unpublishedEvents(trx, PUBLISH_BATCH);
      await orderEvents.publish(trx, events);
      await markPublished(trx, events.map((e) => e.event.id));
      return events.length;
    });
    published += n;
    if (n < PUBLISH_BATCH) return published;
  }
}
