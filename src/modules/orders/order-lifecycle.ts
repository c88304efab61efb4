import type { Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database, OrderRow, OrderStatus } from '../../db/schema.ts';
import type { OrderEventBus } from '../../events/order-events.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import { changeStock, type ProductState } from '../products/products.repository.ts';
import { orderStatusTransitions } from './orders.metrics.ts';
import { changeStatuses, insertOrder, lockOrdersWithProducts, markPublished, unpublishedEvents, type LinePrice, type NewOrder, type StatusChange } from './orders.changes.repository.ts';

/** Every change of an order, in the caller's transaction: the change and its event commit together. */
export const PUBLISH_QUEUE = 'order-events-publish';

/** The orders each open transaction changed; a rolled-back transaction's go with it, uncounted. */
const changedIn = new WeakMap<Transaction<Database>, OrderRow[]>();

function changedInTransaction(trx: Transaction<Database>, orders: readonly OrderRow[]): void {
  if (orders.length > 0) changedIn.set(trx, [...(changedIn.get(trx) ?? []), ...orders]);
}

/** Runs `change` in a transaction of its own; once committed, counts its status changes and wakes the publishing job. */
export async function inOrderTransaction<T>(db: Db, queue: JobQueue, change: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  let ran: Transaction<Database> | undefined;
  const result = await db.transaction().execute((trx) => {
    ran = trx;
    return change(trx);
  });
  const changed = changedIn.get(ran!);
  if (changed) {
    changedIn.delete(ran!);
    for (const o of changed) orderStatusTransitions.inc({ status: o.status });
    queue.wake(PUBLISH_QUEUE);
  }
  return result;
}

/** The statuses an order can be cancelled from: not yet final, or completed (its stock goes back). */
export const CANCELLABLE: readonly OrderStatus[] = ['pending', 'processing', 'completed'];

/** Places a pending order with its event and processing job; `order` is undefined when a product is unknown or inactive. */
export async function placeOrder(trx: Transaction<Database>, queue: JobQueue, input: NewOrder): Promise<{ order: OrderRow | undefined; products: ProductState[] }> {
  const { order, products } = await insertOrder(trx, input);
  if (!order) return { order: undefined, products };
  await queue.send(trx, 'order-process', { orderId: order.id });
  changedInTransaction(trx, [order]);
  return { order, products };
}

/** `changeStatuses` with the change counted; returns the orders moved. */
export async function changeOrders(trx: Transaction<Database>, changes: readonly StatusChange[], linePrices: readonly LinePrice[] = []): Promise<OrderRow[]> {
  const changed = await changeStatuses(trx, changes, linePrices);
  changedInTransaction(trx, changed);
  return changed;
}

/** `changeOrders` for one order; undefined when it was no longer in `change.from`. */
export async function changeOrder(trx: Transaction<Database>, change: StatusChange): Promise<OrderRow | undefined> {
  return (await changeOrders(trx, [change]))[0];
}

/** Cancels an order locked with `lockOrder`; a completed one's units go back (processing re-reads the status under that lock). */
export async function cancelOrder(trx: Transaction<Database>, order: OrderRow, reason: string | null): Promise<OrderRow> {
  if (order.status === 'completed') {
    // the lock order: the order row, then its products by id (docs/architecture.md, Locks)
    const { orders } = await lockOrdersWithProducts(trx, [order.id], 'completed');
    await changeStock(trx, orders[0].demand.map((d) => ({ productId: d.productId, delta: d.quantity })));
  }
  const cancelled = await changeOrder(trx, { id: order.id, from: order.status, to: 'cancelled', reason });
  if (!cancelled) throw new Error(`order ${order.id}: not ${order.status} under its lock`);
  return cancelled;
}

const PUBLISH_BATCH = 200;

/** The publishing job: hands the events to the listeners and marks them in one transaction, so a failure rolls back both. */
export async function publishEvents(db: Db, orderEvents: OrderEventBus): Promise<void> {
  for (;;) {
    const n = await db.transaction().execute(async (trx) => {
      const events = await unpublishedEvents(trx, PUBLISH_BATCH);
      await orderEvents.publish(trx, events);
      await markPublished(trx, events.map((e) => e.event.id));
      return events.length;
    });
    if (n < PUBLISH_BATCH) return;
  }
}
