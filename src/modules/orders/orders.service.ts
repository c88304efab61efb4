import crypto from 'node:crypto';
import type { Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Database, OrderEventRow, OrderRow, OrderStatus, UserRow } from '../../db/schema.ts';
import { AppError } from '../../http/errors.ts';
import { pageOf, type PageResult } from '../../http/common.schemas.ts';
import { MAX_ID } from '../../http/path-ids.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import { findProductStates } from '../products/products.repository.ts';
import { CANCELLABLE, cancelOrder, changeOrder, inOrderTransaction, placeOrder } from './order-lifecycle.ts';
import { findIdempotencyKey, lockOrder, saveIdempotencyKey, type NewOrder } from './orders.changes.repository.ts';
import { toOrderCreated } from './orders.mapper.ts';
import { findOrderIdByExternalId, findOrderWithLines, listOrderEvents, listUserOrders, type OrderLineView } from './orders.reads.repository.ts';
import type { OrderCreateBody, OrderCreated, OrderListQuery } from './orders.schemas.ts';

export const MAX_QUANTITY = 1000;

const orderNotFound = () => new AppError('NOT_FOUND', 'Order not found');
const notYourOrder = () => new AppError('FORBIDDEN', 'Not enough permissions to access this order');

/** The 400 for the first line whose product is not among the active ones of `found`. */
function invalidProduct(body: OrderCreateBody, found: readonly { id: number; is_active: boolean }[]): AppError {
  const active = new Set(found.filter((p) => p.is_active).map((p) => p.id));
  const bad = body.items.find((l) => !active.has(l.product_id));
  // the insert refused the order for its products: one of them must be missing or inactive
  if (!bad) throw new Error('an order was refused for its products, but all of them are active');
  return new AppError('INVALID_PRODUCT', `Invalid product id ${bad.product_id}: no such active product`);
}

/** Thrown inside the creating transaction when a concurrent request took the key first. */
class KeyTaken extends Error {}

function requestHash(body: OrderCreateBody): string {
  // the body is validated (no unknown properties), so this is a canonical form of it
  const canonical = JSON.stringify({
    items: body.items.map((l) => ({ product_id: l.product_id, quantity: l.quantity })),
    shipping_address: body.shipping_address,
  });
  return crypto.createHash('sha256').update(canonical).digest('hex');
}

export class OrdersService {
  private readonly db: Db;
  private readonly queue: JobQueue;

  constructor(deps: { db: Db; queue: JobQueue }) {
    this.db = deps.db;
    this.queue = deps.queue;
  }

  /** Places the order; an Idempotency-Key stores the response in its transaction, so a repeat gets that answer, not a second order. */
  async create(actor: UserRow, body: OrderCreateBody, idempotencyKey?: string): Promise<{ body: OrderCreated; replayed: boolean }> {
    const hash = idempotencyKey === undefined ? '' : requestHash(body);
    const replay = async () => {
      const earlier = idempotencyKey === undefined ? undefined : await findIdempotencyKey(this.db, actor.id, idempotencyKey);
      if (earlier && earlier.request_hash !== hash) {
        throw new AppError('IDEMPOTENCY_KEY_REUSED', 'Idempotency-Key has already been used with a different request body');
      }
      return earlier && { body: earlier.response_body as OrderCreated, replayed: true };
    };
    const earlier = await replay();
    if (earlier) return earlier;
    const bad = body.items.find((l) => l.quantity < 1 || l.quantity > MAX_QUANTITY);
    if (bad) {
      throw new AppError('INVALID_QUANTITY', `Invalid quantity ${bad.quantity} for product ${bad.product_id}: must be between 1 and ${MAX_QUANTITY}`);
    }
    const lines = body.items.map((l) => ({ productId: l.product_id, quantity: l.quantity }));
    // an id outside the integer range is no product: the separate check names the first bad line
    if (lines.some((l) => !(l.productId >= 1 && l.productId <= MAX_ID))) {
      throw invalidProduct(body, await findProductStates(this.db, lines.map((l) => l.productId).filter((id) => id >= 1 && id <= MAX_ID)));
    }
    try {
      const created = await inOrderTransaction(this.db, this.queue, async (trx) => {
        const placed = await placeOrder(trx, this.queue, { userId: actor.id, shippingAddress: body.shipping_address, lines });
        if (!placed.order) throw invalidProduct(body, placed.products);
        const response = toOrderCreated(placed.order, lines);
        if (idempotencyKey !== undefined && !(await saveIdempotencyKey(trx, actor.id, idempotencyKey, hash, response))) throw new KeyTaken();
        return response;
      });
      return { body: created, replayed: false };
    } catch (err) {
      if (!(err instanceof KeyTaken || isUniqueViolation(err))) throw err;
      // a concurrent request with the same key committed first: answer as a repeat of it
      const repeated = await replay();
      if (!repeated) throw err;
      return repeated;
    }
  }

  /** `placeOrder` in a transaction of `inTransaction` (the one recording a platform's webhook as processed). */
  async place(trx: Transaction<Database>, input: NewOrder): Promise<OrderRow | undefined> {
    return (await placeOrder(trx, this.queue, input)).order;
  }

  /** Runs `change` in a transaction in which `place` and `cancelByExternalId` may run; their changes are counted and published once it has committed. */
  async inTransaction<T>(change: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    return inOrderTransaction(this.db, this.queue, change);
  }

  async findIdByExternalId(trx: Transaction<Database>, source: string, externalId: string): Promise<number | undefined> {
    return findOrderIdByExternalId(trx, source, externalId);
  }

  /** Any order with its lines, whoever owns it (for the service's own jobs, never for a caller). */
  async find(id: number): Promise<{ order: OrderRow; lines: OrderLineView[] } | undefined> {
    return findOrderWithLines(this.db, id);
  }

  /** The caller's own orders, newest first; `statuses` are those the caller's status filter stands for. */
  async list(actor: UserRow, q: OrderListQuery, statuses: OrderStatus[] | undefined): Promise<PageResult<OrderRow>> {
    const { rows, total } = await listUserOrders(this.db, { userId: actor.id, statuses }, { limit: q.page_size, offset: (q.page - 1) * q.page_size });
    return pageOf(rows, total, q.page, q.page_size);
  }

  /** One order with its lines, for its owner only (the specification's "Read order"): administrators get 403 too. */
  async get(actor: UserRow, id: number): Promise<{ order: OrderRow; lines: OrderLineView[] }> {
    const found = await findOrderWithLines(this.db, id);
    if (!found) throw orderNotFound();
    if (found.order.user_id !== actor.id) throw notYourOrder();
    return found;
  }

  /** The events of one of the caller's orders, oldest first (the owner only, as for reading it). */
  async events(actor: UserRow, id: number): Promise<OrderEventRow[]> {
    await this.get(actor, id);
    return listOrderEvents(this.db, id);
  }

  /** The order locked in `trx`, if `actor` owns it or is an administrator. */
  private async lockFor(trx: Transaction<Database>, actor: UserRow, id: number): Promise<OrderRow> {
    const order = await lockOrder(trx, id);
    if (!order) throw orderNotFound();
    if (order.user_id !== actor.id && !actor.is_admin) throw notYourOrder();
    return order;
  }

  /** A failed order back to pending, queued for processing again. */
  async retry(actor: UserRow, id: number): Promise<OrderRow> {
    return inOrderTransaction(this.db, this.queue, async (trx) => {
      const order = await this.lockFor(trx, actor, id);
      if (order.status !== 'failed') {
        // v1 reads a cancelled order as failed, so the answer does not name that status
        const now = order.status === 'cancelled' ? 'will not be fulfilled' : `is ${order.status}`;
        throw new AppError('INVALID_STATE', `Only failed orders can be retried; this order ${now}`);
      }
      const pending = await changeOrder(trx, { id: order.id, from: 'failed', to: 'pending', failureReason: null, total: '0' });
      if (!pending) throw new Error(`order ${order.id}: not failed under its lock`);
      await this.queue.send(trx, 'order-process', { orderId: order.id });
      return pending;
    });
  }

  /** Cancels an order under its row's lock, like its processing, so the two never interleave; returns it with its lines. */
  async cancel(actor: UserRow, id: number, reason: string | null): Promise<{ order: OrderRow; lines: OrderLineView[] }> {
    await inOrderTransaction(this.db, this.queue, async (trx) => {
      const order = await this.lockFor(trx, actor, id);
      // v1 reads a cancelled order as failed, but only v2 has this route, so the answer names the status
      if (!CANCELLABLE.includes(order.status)) {
        throw new AppError('ORDER_NOT_CANCELLABLE', `Only pending, processing or completed orders can be cancelled; this order is ${order.status}`);
      }
      await cancelOrder(trx, order, reason);
    });
    const found = await findOrderWithLines(this.db, id);
    if (!found) throw orderNotFound();
    return found;
  }

  /** Cancels a platform's order in the caller's transaction; undefined: no such order (yet), `cancelled` false: final already. */
  async cancelByExternalId(
    trx: Transaction<Database>,
    source: string,
    externalId: string,
    reason: string | null,
  ): Promise<{ orderId: number; cancelled: boolean } | undefined> {
    const id = await findOrderIdByExternalId(trx, source, externalId);
    const order = id === undefined ? undefined : await lockOrder(trx, id);
    if (!order) return undefined;
    if (!CANCELLABLE.includes(order.status)) return { orderId: order.id, cancelled: false };
    await cancelOrder(trx, order, reason);
    return { orderId: order.id, cancelled: true };
  }
}
