import type { Transaction } from 'kysely';
import type { Database, OrderRow, OrderStatus } from '../../db/schema.ts';
import type { OrderEventBus } from '../../events/order-events.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import { changeStock, lockProducts, stockChange, type ProductState, type StockChange } from '../products/products.repository.ts';
import { countStatusChanges } from './orders.metrics.ts';
import { changeStatuses, insertOrder, orderDemand, type LinePrice, type NewOrder, type StatusChange } from './orders.changes.repository.ts';

/**
 * Every change of an order, one function each, each in the caller's transaction: the change, its
 * event, and what the event's listeners write (events/order-events.ts) commit together.
 */

/** What a failure concerned: for a stock failure, each short line. */
export interface FailureDetails {
  lines: { product_id: number; requested: number; available: number }[];
}

/** The statuses an order can be cancelled from: not yet final, or completed (its stock goes back). */
export const CANCELLABLE: readonly OrderStatus[] = ['pending', 'processing', 'completed'];

/**
 * Places a pending order with its lines, its `order.created` event and its processing job, in
 * `trx`: an order never exists without its job and its event. `order` is undefined, and nothing
 * is written, when a line's product is unknown or inactive; `products` are those found.
 */
export async function placeOrder(
  trx: Transaction<Database>,
  deps: { orderEvents: OrderEventBus; queue: JobQueue },
  input: NewOrder,
): Promise<{ order: OrderRow | undefined; products: ProductState[] }> {
  const job = deps.queue.linkedJob('order-process', 'orderId');
  const { placed, products, reads } = await insertOrder(trx, input, { alongside: job.link, reads: (owners) => deps.orderEvents.reads(owners) });
  if (!placed) return { order: undefined, products };
  await deps.queue.send(trx, 'order-process', { orderId: placed.order.id }, { id: job.id });
  await deps.orderEvents.publish(trx, [placed], reads);
  countStatusChanges([placed.order]);
  return { order: placed.order, products };
}

/**
 * Moves orders from one status to another (`changeStatuses`: those still in their `from` status)
 * and publishes their events, in `trx`; completed orders' lines take `linePrices`, and `stock` is
 * the stock they take, changed in the same statement. Returns the orders moved.
 */
export async function changeOrders(
  trx: Transaction<Database>,
  orderEvents: OrderEventBus,
  changes: readonly StatusChange[],
  opts: { linePrices?: readonly LinePrice[]; stock?: readonly StockChange[] } = {},
): Promise<OrderRow[]> {
  const { linePrices, stock = [] } = opts;
  const alongside = stock.length > 0 ? stockChange(stock) : undefined;
  const { changed, reads } = await changeStatuses(trx, changes, { linePrices, alongside, reads: (owners) => orderEvents.reads(owners) });
  await orderEvents.publish(trx, changed, reads);
  const orders = changed.map((c) => c.order);
  // cancelOrder's change is counted here too
  countStatusChanges(orders);
  return orders;
}

/** `changeOrders` for one order; undefined when it was no longer in `change.from`. */
export async function changeOrder(trx: Transaction<Database>, orderEvents: OrderEventBus, change: StatusChange): Promise<OrderRow | undefined> {
  const [changed] = await changeOrders(trx, orderEvents, [change]);
  return changed;
}

/**
 * Cancels a locked order (read with `lockOrder` in `trx`; the caller checked it is `CANCELLABLE`).
 * A completed order's reserved units go back to stock in the same transaction; a pending or
 * processing one has reserved nothing, and its processing re-reads the status under the same row
 * lock, so it never prices or reserves it afterwards.
 */
export async function cancelOrder(trx: Transaction<Database>, orderEvents: OrderEventBus, order: OrderRow, reason: string | null): Promise<OrderRow> {
  if (order.status === 'completed') {
    const demand = await orderDemand(trx, order.id);
    // the processing's lock order (the order row, then its products by id), so the two never deadlock
    await lockProducts(trx, demand.map((d) => d.productId));
    await changeStock(trx, demand.map((d) => ({ productId: d.productId, delta: d.quantity })));
  }
  const cancelled = await changeOrder(trx, orderEvents, { id: order.id, from: order.status, to: 'cancelled', reason });
  if (!cancelled) throw new Error(`order ${order.id}: not ${order.status} under its lock`);
  return cancelled;
}
