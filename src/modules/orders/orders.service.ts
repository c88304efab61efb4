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
import { findIdempotencyKey, saveIdempotencyKey, type IdempotentResponse } from './idempotency.repository.ts';
import { CANCELLABLE, cancelOrder, changeOrder, inOrderTransaction, placeOrder } from './order-lifecycle.ts';
import { lockOrder, type NewOrder } from './orders.changes.repository.ts';
import { toOrderCreated } from './orders.mapper.ts';
import { findOrderIdByExternalId, findOrderWithLines, listOrderEvents, listUserOrders, type OrderLineView } from './orders.reads.repository.ts';
import type { OrderCreateBody, OrderCreated, OrderListQuery } from './orders.schemas.ts';

/** The most units of one product an order line may ask for. */
export const MAX_QUANTITY = 1000;
const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

const orderNotFound = () => new AppError('NOT_FOUND', 'Order not found');
const notYourOrder = () => new AppError('FORBIDDEN', 'Not enough permissions to access this order');

/** 400 for a quantity outside 1–1000, naming the first bad line. */
function assertQuantities(body: OrderCreateBody): void {
  for (const line of body.items) {
    if (line.quantity < 1 || line.quantity > MAX_QUANTITY) {
      throw new AppError('INVALID_QUANTITY', `Invalid quantity ${line.quantity} for product ${line.product_id}: must be between 1 and ${MAX_QUANTITY}`);
    }
  }
}

/** The 400 for the first line whose product is not among the active ones of `found`. */
function invalidProduct(body: OrderCreateBody, found: readonly { id: number; is_active: boolean }[]): AppError {
  const active = new Set(found.filter((p) => p.is_active).map((p) => p.id));
  const bad = body.items.find((l) => !active.has(l.product_id));
  // the insert refused the order for its products: one of them must be missing or inactive
  if (!bad) throw new Error('an order was refused for its products, but all of them are active');
  return new AppError('INVALID_PRODUCT', `Invalid product id ${bad.product_id}: no such active product`);
}

export interface CreateOrderResult {
  /** only successful creations are stored under a key, so a replay is a 201 too */
  statusCode: 201;
  body: OrderCreated;
  /** true when the response is the stored answer to an earlier request with the same key */
  replayed: boolean;
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

  /**
   * Validates the lines and places the order in one transaction (the insert checks every product is
   * known and active). With an Idempotency-Key the response is stored in that transaction too, so a
   * repeated (or concurrent) request gets the first answer instead of a second order.
   */
  async create(actor: UserRow, body: OrderCreateBody, idempotencyKey?: string): Promise<CreateOrderResult> {
    const hash = idempotencyKey === undefined ? '' : requestHash(body);
    if (idempotencyKey !== undefined) {
      const earlier = await findIdempotencyKey(this.db, actor.id, idempotencyKey);
      if (earlier) return this.replay(earlier, hash);
    }
    assertQuantities(body);
    const lines = body.items.map((l) => ({ productId: l.product_id, quantity: l.quantity }));
    // an id outside the integer range is no product: the separate check names the first bad line
    if (lines.some((l) => !(l.productId >= 1 && l.productId <= MAX_ID))) {
      throw invalidProduct(body, await findProductStates(this.db, lines.map((l) => l.productId).filter((id) => id >= 1 && id <= MAX_ID)));
    }
    const input = { userId: actor.id, shippingAddress: body.shipping_address, lines };
    try {
      const created = await inOrderTransaction(this.db, this.queue, async (trx) => {
        const placed = await placeOrder(trx, this.queue, input);
        if (!placed.order) throw invalidProduct(body, placed.products);
        const response = toOrderCreated(placed.order, lines);
        if (idempotencyKey !== undefined) {
          const saved = await saveIdempotencyKey(trx, {
            userId: actor.id,
            key: idempotencyKey,
            requestHash: hash,
            status: 201,
            body: response,
            expiresAt: new Date(Date.now() + IDEMPOTENCY_TTL_MS),
          });
          if (!saved) throw new KeyTaken();
        }
        return response;
      });
      return { statusCode: 201, body: created, replayed: false };
    } catch (err) {
      const duplicate = err instanceof KeyTaken || isUniqueViolation(err);
      if (idempotencyKey === undefined || !duplicate) throw err;
      // a concurrent request with the same key committed first: answer as a repeat of it
      const earlier = await findIdempotencyKey(this.db, actor.id, idempotencyKey);
      if (!earlier) throw err;
      return this.replay(earlier, hash);
    }
  }

  private replay(earlier: IdempotentResponse, hash: string): CreateOrderResult {
    if (earlier.request_hash !== hash) {
      throw new AppError('IDEMPOTENCY_KEY_REUSED', 'Idempotency-Key has already been used with a different request body');
    }
    return { statusCode: earlier.response_status as 201, body: earlier.response_body as OrderCreated, replayed: true };
  }

  /**
   * `placeOrder` in the caller's transaction, one of `inTransaction` (an inbound platform order is
   * placed in the one that records its webhook as processed); undefined when a line's product is unknown or inactive.
   */
  async place(trx: Transaction<Database>, input: NewOrder): Promise<OrderRow | undefined> {
    return (await placeOrder(trx, this.queue, input)).order;
  }

  /** Runs `change` in a transaction in which `place` and `cancelByExternalId` may run; their changes are counted and published once it has committed. */
  async inTransaction<T>(change: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    return inOrderTransaction(this.db, this.queue, change);
  }

  /** The id of the order a platform knows by `externalId`, if it exists. */
  async findIdByExternalId(trx: Transaction<Database>, source: string, externalId: string): Promise<number | undefined> {
    return findOrderIdByExternalId(trx, source, externalId);
  }

  /** Any order with its lines, whoever owns it (for the service's own jobs, never for a caller). */
  async find(id: number): Promise<{ order: OrderRow; lines: OrderLineView[] } | undefined> {
    return findOrderWithLines(this.db, id);
  }

  /** The caller's own orders, newest first; `statuses` (when given) are those the caller's status filter stands for. */
  async list(actor: UserRow, q: Omit<OrderListQuery, 'status'> & { statuses?: readonly OrderStatus[] }): Promise<PageResult<OrderRow>> {
    const { rows, total } = await listUserOrders(this.db, {
      userId: actor.id,
      statuses: q.statuses,
      limit: q.page_size,
      offset: (q.page - 1) * q.page_size,
    });
    return pageOf(rows, total, q.page, q.page_size);
  }

  /**
   * One order with its lines, for its owner only: the specification gives "Read order" to the owner
   * alone, so another user's order is 403, administrators included.
   */
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

  /** A failed order back to pending, queued for processing again (owner or administrator). */
  async retry(actor: UserRow, id: number): Promise<OrderRow> {
    return inOrderTransaction(this.db, this.queue, async (trx) => {
      const order = await lockOrder(trx, id);
      if (!order) throw orderNotFound();
      if (order.user_id !== actor.id && !actor.is_admin) throw notYourOrder();
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

  /**
   * Cancels an order (owner or administrator) under the order row's lock, like its processing, so
   * the two never interleave. Returns the order as cancelled, with its lines.
   */
  async cancel(actor: UserRow, id: number, reason: string | null): Promise<{ order: OrderRow; lines: OrderLineView[] }> {
    await inOrderTransaction(this.db, this.queue, async (trx) => {
      const order = await lockOrder(trx, id);
      if (!order) throw orderNotFound();
      if (order.user_id !== actor.id && !actor.is_admin) throw notYourOrder();
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

  /**
   * Cancels the order a platform knows by `externalId`, in the caller's transaction (the one that
   * records the platform's cancellation as processed). `undefined`: no such order (yet); `cancelled`
   * false: the order was failed or cancelled already, and stays as it is.
   */
  async cancelByExternalId(
    trx: Transaction<Database>,
    source: string,
    externalId: string,
    reason: string | null,
  ): Promise<{ orderId: number; cancelled: boolean } | undefined> {
    const id = await findOrderIdByExternalId(trx, source, externalId);
    if (id === undefined) return undefined;
    const order = await lockOrder(trx, id);
    if (!order) return undefined;
    if (!CANCELLABLE.includes(order.status)) return { orderId: id, cancelled: false };
    await cancelOrder(trx, order, reason);
    return { orderId: id, cancelled: true };
  }
}
