import type { Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database, OrderRow, OrderStatus } from '../../db/schema.ts';
import type { OrderEventBus } from '../../events/order-events.ts';
import type { JobQueue, LinkedJob } from '../../jobs/queue.ts';
import { lockProducts, productStatesQuery, stockChangePart, type ProductState, type StockChange } from '../products/products.repository.ts';
import {
  insertCheckedOrderWithEvent,
  insertOrderWithEvent,
  orderDemand,
  updateOrderWithEvent,
  type InsertedOrder,
  type LinePrice,
  type NewOrder,
  type OrderChange,
  type ProductCheck,
} from './orders.repository.ts';

/** What a failure concerned: for a stock failure, each short line. */
export interface FailureDetails {
  lines: { product_id: number; requested: number; available: number }[];
}

/** What a status change writes besides the status: see `changeOrderStatus`. */
export interface StatusFields {
  failureReason?: string | null;
  totalAmount?: string | number;
  details?: FailureDetails;
  cancelReason?: string | null;
  /** the prices and names the order's lines get, written in the same statement */
  linePrices?: readonly LinePrice[];
  /** units taken from (negative) or put back into (positive) stock, in the same statement */
  stock?: readonly StockChange[];
}

/**
 * Moves a locked order to `next`, writes its `order.status_changed` event and publishes it, all in
 * `trx`. `order` must have been read with `lockOrder` in `trx`. A move to `failed` records the
 * failure reason (and its details) on the event as well as on the order; a move to `cancelled`
 * records when on the order and why (`cancelReason`, when given) on the event. `stock` changes the
 * stock of products the caller locked (`lockProducts`) in the same statement.
 */
export async function changeOrderStatus(
  trx: Transaction<Database>,
  orderEvents: OrderEventBus,
  order: OrderRow,
  next: OrderStatus,
  fields: StatusFields = {},
): Promise<OrderRow> {
  const listeners = { bus: orderEvents, read: 'lookups', owner: order.user_id } as const;
  const { order: updated, event, looked } = await updateOrderWithEvent(trx, order.id, { ...statusChange(order, next, fields), listeners });
  await orderEvents.publish(trx, event, updated, looked);
  return updated;
}

/**
 * `changeOrderStatus` as the last statement of `trx`, for a change no event listener acts on
 * (`OrderEventBus.quietWhen`, read in the statement's snapshot): there is nothing to publish after
 * it, so the transaction's COMMIT rides with it (`THEN_COMMIT`) and ending the transaction costs no
 * round trip of its own. Returns:
 * - the order as changed, committed;
 * - `'listened'` when a listener's scope cannot tell: nothing was sent, and the caller goes on in
 *   `trx` with `changeOrderStatus`;
 * - `'again'` when a listener acts after all (a subscription matches this change): nothing was
 *   written and the transaction is over (on PostgreSQL it committed with the statement, releasing
 *   the locks), so the caller starts over in a new one and runs `changeOrderStatus`.
 */
export async function changeOrderStatusLast(
  trx: Transaction<Database>,
  orderEvents: OrderEventBus,
  order: OrderRow,
  next: OrderStatus,
  fields: StatusFields = {},
): Promise<OrderRow | 'listened' | 'again'> {
  if (!orderEvents.tellsQuiet({ type: 'order.status_changed', status: next })) return 'listened';
  const listeners = { bus: orderEvents, read: 'quiet', owner: order.user_id } as const;
  // `onlyFrom` the status the caller locked it in: a no-op check, under which a change that the
  // listeners' condition refuses gives undefined
  const changed = await updateOrderWithEvent(trx, order.id, { ...statusChange(order, next, fields), onlyFrom: order.status, listeners, commits: true });
  return changed?.order ?? 'again';
}

/** The change of a locked order to `next`, with its event, for `updateOrderWithEvent`. */
function statusChange(order: OrderRow, next: OrderStatus, fields: StatusFields) {
  const now = new Date();
  const stock = fields.stock && fields.stock.length > 0 ? fields.stock : undefined;
  return {
    patch: {
      status: next,
      updated_at: now,
      ...(next === 'cancelled' ? { cancelled_at: now } : {}),
      ...(fields.failureReason !== undefined ? { failure_reason: fields.failureReason } : {}),
      ...(fields.totalAmount !== undefined ? { total_amount: fields.totalAmount } : {}),
    },
    event: {
      type: 'order.status_changed',
      previousStatus: order.status,
      reason: next === 'failed' ? (fields.failureReason ?? null) : next === 'cancelled' ? (fields.cancelReason ?? null) : null,
      details: next === 'failed' ? (fields.details ?? null) : null,
    },
    linePrices: fields.linePrices,
    alongside: stock && stockChangePart(stock),
  } satisfies OrderChange;
}

/**
 * Moves order `orderId` from `pending` to `processing`, writes its event and publishes it, all in
 * `trx` and in one statement: no lock is taken first (the UPDATE's own lock and its re-check of
 * the status under it decide, see `updateOrderWithEvent`). Returns the order as moved, or undefined
 * when it was not pending (or does not exist).
 */
export async function startProcessing(trx: Transaction<Database>, orderEvents: OrderEventBus, orderId: number): Promise<OrderRow | undefined> {
  const moved = await updateOrderWithEvent(trx, orderId, { ...startChange(), listeners: { bus: orderEvents, read: 'lookups', owner: 'order' } });
  if (moved === undefined) return undefined;
  await orderEvents.publish(trx, moved.event, moved.order, moved.looked);
  return moved.order;
}

/**
 * `startProcessing` as one statement outside any transaction, when no listener acts on the move
 * (`OrderEventBus.quietWhen`, read in the statement's snapshot): it then commits alone, with
 * nothing to publish, and the move costs one round trip instead of two (the statement with BEGIN,
 * then COMMIT). Undefined, with nothing written, when the order did not move (not pending, or a
 * listener may act): the caller then runs `startProcessing` in a transaction.
 */
export async function startProcessingQuietly(db: Db, orderEvents: OrderEventBus, orderId: number): Promise<OrderRow | undefined> {
  if (!orderEvents.tellsQuiet({ type: 'order.status_changed', status: 'processing' })) return undefined;
  return (await updateOrderWithEvent(db, orderId, { ...startChange(), listeners: { bus: orderEvents, read: 'quiet', owner: 'order' } }))?.order;
}

/** pending → processing, with its event, only from `pending`. */
function startChange() {
  return {
    patch: { status: 'processing', updated_at: new Date() },
    event: { type: 'order.status_changed', previousStatus: 'pending', reason: null, details: null },
    onlyFrom: 'pending',
  } as const;
}

type PlaceDeps = { orderEvents: OrderEventBus; queue: JobQueue };

/** The event of a new order, as known before its statement runs. */
const CREATED = { type: 'order.created', status: 'pending' } as const;

/** A new order's processing job, which the order's insert sends, with its link. */
function processingJob(deps: PlaceDeps): LinkedJob<'order-process'> {
  return deps.queue.linkedJob('order-process', 'orderId');
}

/** Publishes an inserted order's `order.created`, in `trx`. */
async function announce(trx: Transaction<Database>, deps: PlaceDeps, inserted: InsertedOrder): Promise<OrderRow> {
  await deps.orderEvents.publish(trx, inserted.event, inserted.order, inserted.looked);
  return inserted.order;
}

/**
 * Inserts a pending order with its lines, writes and publishes `order.created`, and enqueues the
 * processing job, all in `trx`: the order can never exist without its job and its event. Products
 * are not validated here: callers check them first.
 */
export async function placeOrder(trx: Transaction<Database>, deps: PlaceDeps, input: NewOrder): Promise<OrderRow> {
  const job = processingJob(deps);
  return announce(trx, deps, await insertOrderWithEvent(trx, input, { bus: deps.orderEvents, read: 'lookups' }, job.part));
}

/**
 * `placeOrder` for lines whose products are not checked yet: the insert itself checks that every
 * one is known and active (and gives the lines their names), in the same statement. `order` is
 * undefined, and nothing is written, when one is not; `products` are the products found, to say which.
 */
export async function placeCheckedOrder(
  trx: Transaction<Database>,
  deps: PlaceDeps,
  input: Omit<NewOrder, 'lines'> & { lines: readonly { productId: number; quantity: number }[] },
): Promise<{ order: OrderRow | undefined; products: ProductState[] }> {
  const job = processingJob(deps);
  const { inserted, products } = await insertCheckedOrderWithEvent(trx, input, { bus: deps.orderEvents, read: 'lookups' }, productCheck(input.lines), job.part);
  if (!inserted) return { order: undefined, products };
  return { order: await announce(trx, deps, inserted), products };
}

/**
 * `placeCheckedOrder` as one statement outside any transaction, for an order no listener acts on
 * (`OrderEventBus.quietWhen`, read in the statement's snapshot): the order, its lines, its event
 * and its job then commit alone, with nothing to publish, in one round trip instead of two (the
 * insert, with BEGIN written in front of it, then COMMIT). Undefined, with nothing written, when a
 * listener may act (a subscription matches, say): the caller places the order in a transaction.
 */
export async function placeQuietOrder(
  db: Db,
  deps: PlaceDeps,
  input: Omit<NewOrder, 'lines'> & { lines: readonly { productId: number; quantity: number }[] },
): Promise<{ order: OrderRow | undefined; products: ProductState[] } | undefined> {
  if (!deps.orderEvents.tellsQuiet(CREATED)) return undefined;
  const job = processingJob(deps);
  const { inserted, products, held } = await insertCheckedOrderWithEvent(db, input, { bus: deps.orderEvents, read: 'quiet' }, productCheck(input.lines), job.part);
  if (!held) return undefined;
  return { order: inserted?.order, products };
}

/** The check of a new order's products, for the statement that inserts it. */
function productCheck(lines: readonly { productId: number }[]): ProductCheck {
  const ids = [...new Set(lines.map((l) => l.productId))];
  return { states: { key: 'products', args: { ids }, build: (a, db) => productStatesQuery(db, a.ids as number[]) }, count: ids.length };
}

/** The statuses an order can be cancelled from: not yet final, or completed (its stock goes back). */
export const CANCELLABLE: readonly OrderStatus[] = ['pending', 'processing', 'completed'];

/**
 * Cancels a locked order (read with `lockOrder` in `trx`; the caller checked it is `CANCELLABLE`).
 * A completed order's reserved units go back to stock in the same transaction; a pending or
 * processing one has reserved nothing, and its processing re-reads the status under the same row
 * lock, so it never prices or reserves it afterwards.
 */
export async function cancelOrder(
  trx: Transaction<Database>,
  orderEvents: OrderEventBus,
  order: OrderRow,
  reason: string | null,
): Promise<OrderRow> {
  let stock: StockChange[] = [];
  if (order.status === 'completed') {
    const demand = await orderDemand(trx, order.id);
    // the processing's lock order (the order row, then its products by id), so the two never deadlock
    await lockProducts(trx, demand.map((d) => d.productId));
    stock = demand.map((d) => ({ productId: d.productId, delta: d.quantity }));
  }
  return changeOrderStatus(trx, orderEvents, order, 'cancelled', { cancelReason: reason, stock });
}
