import crypto from 'node:crypto';
import type { Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Database, OrderEventRow, OrderRow, OrderStatus, UserRow } from '../../db/schema.ts';
import { AppError, invalidQuery } from '../../http/errors.ts';
import { cappedPageOf, pageOf, type CappedPageResult, type PageResult } from '../../http/common.schemas.ts';
import { MAX_ID } from '../../http/path-ids.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import { findProductStates } from '../products/products.repository.ts';
import { findCustomerIdsByPrefix, findCustomers, type Customer } from '../users/customers.repository.ts';
import { findUserByEmail } from '../users/users.repository.ts';
import { CANCELLABLE, cancelOrder, changeOrder, inOrderTransaction, placeOrder } from './order-lifecycle.ts';
import { findIdempotencyKey, lockOrder, saveIdempotencyKey, type NewOrder } from './orders.changes.repository.ts';
import { toOrderCreated } from './orders.mapper.ts';
import { findOrderIdByExternalId, findOrderWithLines, listOrderEvents, listOrders, listUserOrders, orderBatches, type OrderFilter, type OrderLineView } from './orders.reads.repository.ts';
import type { AdminOrderFilterQuery, AdminOrderListQuery, OrderCreateBody, OrderCreated, OrderListQuery } from './orders.schemas.ts';

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
  private readonly deps: { db: Db; queue: JobQueue };

  constructor(deps: OrdersService['deps']) {
    this.deps = deps;
  }

  /** Places the order; an Idempotency-Key stores the response in its transaction, so a repeat gets that answer, not a second order. */
  async create(actor: UserRow, body: OrderCreateBody, idempotencyKey?: string): Promise<{ body: OrderCreated; replayed: boolean }> {
    const hash = idempotencyKey === undefined ? '' : requestHash(body);
    const replay = async () => {
      const earlier = idempotencyKey === undefined ? undefined : await findIdempotencyKey(this.deps.db, actor.id, idempotencyKey);
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
      throw invalidProduct(body, await findProductStates(this.deps.db, lines.map((l) => l.productId).filter((id) => id >= 1 && id <= MAX_ID)));
    }
    try {
      const created = await inOrderTransaction(this.deps.db, this.deps.queue, async (trx) => {
        const placed = await placeOrder(trx, this.deps.queue, { userId: actor.id, shippingAddress: body.shipping_address, lines });
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
    return (await placeOrder(trx, this.deps.queue, input)).order;
  }

  /** Runs `change` in a transaction in which `place` and `cancelByExternalId` may run; their changes are counted and published once it has committed. */
  async inTransaction<T>(change: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    return inOrderTransaction(this.deps.db, this.deps.queue, change);
  }

  async findIdByExternalId(trx: Transaction<Database>, source: string, externalId: string): Promise<number | undefined> {
    return findOrderIdByExternalId(trx, source, externalId);
  }

  /** Any order with its lines, whoever owns it (for the service's own jobs, never for a caller). */
  async find(id: number): Promise<{ order: OrderRow; lines: OrderLineView[] } | undefined> {
    return findOrderWithLines(this.deps.db, id);
  }

  /** The caller's own orders, newest first; `statuses` are those the caller's status filter stands for. */
  async list(actor: UserRow, q: OrderListQuery, statuses: OrderStatus[] | undefined): Promise<PageResult<OrderRow>> {
    const { rows, total } = await listUserOrders(this.deps.db, { userId: actor.id, statuses }, { limit: q.page_size, offset: (q.page - 1) * q.page_size });
    return pageOf(rows, total, q.page, q.page_size);
  }

  /** One order with its lines, for its owner only (the specification's "Read order"): administrators get 403 too. */
  async get(actor: UserRow, id: number): Promise<{ order: OrderRow; lines: OrderLineView[] }> {
    const found = await findOrderWithLines(this.deps.db, id);
    if (!found) throw orderNotFound();
    if (found.order.user_id !== actor.id) throw notYourOrder();
    return found;
  }

  /** The events of one of the caller's orders, oldest first (the owner only, as for reading it). */
  async events(actor: UserRow, id: number): Promise<OrderEventRow[]> {
    await this.get(actor, id);
    return listOrderEvents(this.deps.db, id);
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
    return inOrderTransaction(this.deps.db, this.deps.queue, async (trx) => {
      const order = await this.lockFor(trx, actor, id);
      if (order.status !== 'failed') {
        // v1 reads a cancelled order as failed, so the answer does not name that status
        const now = order.status === 'cancelled' ? 'will not be fulfilled' : `is ${order.status}`;
        throw new AppError('INVALID_STATE', `Only failed orders can be retried; this order ${now}`);
      }
      const pending = await changeOrder(trx, { id: order.id, from: 'failed', to: 'pending', failureReason: null, total: '0' });
      if (!pending) throw new Error(`order ${order.id}: not failed under its lock`);
      await this.deps.queue.send(trx, 'order-process', { orderId: order.id });
      return pending;
    });
  }

  /** Cancels an order under its row's lock, like its processing, so the two never interleave; returns it with its lines. */
  async cancel(actor: UserRow, id: number, reason: string | null): Promise<{ order: OrderRow; lines: OrderLineView[] }> {
    await inOrderTransaction(this.deps.db, this.deps.queue, async (trx) => {
      const order = await this.lockFor(trx, actor, id);
      // v1 reads a cancelled order as failed, but only v2 has this route, so the answer names the status
      if (!CANCELLABLE.includes(order.status)) {
        throw new AppError('ORDER_NOT_CANCELLABLE', `Only pending, processing or completed orders can be cancelled; this order is ${order.status}`);
      }
      await cancelOrder(trx, order, reason);
    });
    const found = await findOrderWithLines(this.deps.db, id);
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

type ExportRow = { order: OrderRow; customer: Customer | undefined };

const DAY_MS = 24 * 60 * 60 * 1000;
/** orders per read of the export: a bounded part of the list in memory */
const EXPORT_BATCH = 1000;
/** customers a search passes to the orders' query by id; more match a prefix so common that the newest-first walk finds them soon */
const SEARCH_CUSTOMERS = 1000;
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
/** The first instant after the range the API accepts (years 1–9999, UTC). */
const END_OF_RANGE_MS = Date.UTC(10000, 0, 1);

/** The creation-time filters, both inclusive: a date-time to the millisecond the API shows (the database keeps microseconds), a date the whole UTC day. */
function timeRange(q: AdminOrderFilterQuery): Pick<OrderFilter, 'createdFrom' | 'createdBefore'> {
  const range: Pick<OrderFilter, 'createdFrom' | 'createdBefore'> = {};
  if (q.created_from !== undefined) range.createdFrom = new Date(DATE_ONLY.test(q.created_from) ? `${q.created_from}T00:00:00Z` : q.created_from);
  if (q.created_to !== undefined) {
    const to = DATE_ONLY.test(q.created_to) ? Date.parse(`${q.created_to}T00:00:00Z`) + DAY_MS : Date.parse(q.created_to) + 1;
    // past the end of year 9999 is year 10000, which PostgreSQL refuses: no upper bound then (nothing is later)
    if (!(to >= END_OF_RANGE_MS)) range.createdBefore = new Date(to);
  }
  for (const [field, d] of [['created_from', range.createdFrom], ['created_to', range.createdBefore]] as const) {
    if (d !== undefined && Number.isNaN(d.getTime())) throw invalidQuery(field, 'not a valid date or date-time');
  }
  if (range.createdFrom !== undefined && range.createdFrom.getTime() >= (range.createdBefore?.getTime() ?? END_OF_RANGE_MS)) {
    throw invalidQuery('created_to', 'is before created_from');
  }
  return range;
}

/** The administrators' view of orders: every user's, with their origin, failure and history. */
export class OrdersAdminService {
  private readonly db: Db;

  constructor(deps: { db: Db }) {
    this.db = deps.db;
  }

  /** The filter `q` names (`statuses`: those its status filter stands for, `statusesFor`); undefined when no order can match. */
  private async filterOf(q: AdminOrderFilterQuery, statuses: OrderStatus[] | undefined): Promise<OrderFilter | undefined> {
    const userId = q.customer_email === undefined ? q.user_id : (await findUserByEmail(this.db, q.customer_email))?.id;
    // no user has that e-mail, or another user than `user_id` names has it: no order matches
    if (q.customer_email !== undefined && (userId === undefined || (q.user_id !== undefined && q.user_id !== userId))) return undefined;
    const filter: OrderFilter = {
      statuses,
      userId,
      platform: q.source === undefined ? undefined : q.source === 'platform',
      externalId: q.external_id,
      ...timeRange(q),
    };
    const search = q.q?.trim();
    if (search === undefined) return filter;
    // all digits: an order number, and one no order can have matches none
    if (/^\d+$/.test(search)) {
      const id = Number(search);
      return id >= 1 && id <= MAX_ID ? { ...filter, id } : undefined;
    }
    // one owner already chosen: the prefix only has to hold for them
    if (userId !== undefined) return { ...filter, customerPrefix: search };
    // the customers first, so the orders' query knows how many (it guesses a subquery's count, and walked every order for a prefix nobody had)
    const matches = await findCustomerIdsByPrefix(this.db, search, SEARCH_CUSTOMERS + 1);
    if (matches.length === 0) return undefined;
    if (matches.length === 1) return { ...filter, userId: matches[0] };
    return matches.length <= SEARCH_CUSTOMERS ? { ...filter, userIds: matches } : { ...filter, customerPrefix: search };
  }

  /** A page of the orders `q` selects, newest first, with (`withCustomers`, v2) their owners. */
  async list(q: AdminOrderListQuery, statuses: OrderStatus[] | undefined, withCustomers: boolean): Promise<CappedPageResult<OrderRow> & { customers: Map<number, Customer> }> {
    const filter = await this.filterOf(q, statuses);
    if (filter === undefined) return { ...cappedPageOf([], { total: 0, exact: true }, q.page, q.page_size), customers: new Map() };
    const { rows, count } = await listOrders(this.db, filter, { limit: q.page_size, offset: (q.page - 1) * q.page_size });
    const customers = withCustomers ? await findCustomers(this.db, rows.map((o) => o.user_id)) : new Map<number, Customer>();
    return { ...cappedPageOf(rows, count, q.page, q.page_size), customers };
  }

  /** Every order `q` selects, newest first, in batches with their owners; the first is read here, so its errors are answered as errors. */
  async export(q: AdminOrderFilterQuery, statuses: OrderStatus[] | undefined): Promise<AsyncIterable<ExportRow[]> | Iterable<ExportRow[]>> {
    const filter = await this.filterOf(q, statuses);
    if (filter === undefined) return [];
    const batches = orderBatches(this.db, filter, EXPORT_BATCH);
    const first = await batches.next();
    const db = this.db;
    return (async function* () {
      for (let next = first; !next.done; next = await batches.next()) {
        const customers = await findCustomers(db, next.value.map((o) => o.user_id));
        yield next.value.map((order) => ({ order, customer: customers.get(order.user_id) }));
      }
    })();
  }

  /** Any order, whoever owns it, with its lines and every event of its history; 404 when there is no such order. */
  async get(id: number) {
    const [found, events] = await Promise.all([findOrderWithLines(this.db, id), listOrderEvents(this.db, id)]);
    if (!found) throw orderNotFound();
    return { ...found, events };
  }
}
