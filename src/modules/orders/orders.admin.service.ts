import type { Db } from '../../db/database.ts';
import type { OrderEventRow, OrderRow, OrderStatus } from '../../db/schema.ts';
import { AppError, invalidQuery } from '../../http/errors.ts';
import { cappedPageOf, type CappedPageResult } from '../../http/common.schemas.ts';
import { MAX_ID } from '../../http/path-ids.ts';
import { findCustomerIdsByPrefix, findCustomers, type Customer } from '../users/customers.repository.ts';
import { findUserByEmail } from '../users/users.repository.ts';
import { findOrderWithLines, listOrderEvents, listOrders, orderBatches, type OrderFilter, type OrderLineView } from './orders.reads.repository.ts';
import type { AdminOrderFilterQuery, AdminOrderListQuery } from './orders.schemas.ts';

type ExportRow = { order: OrderRow; customer: Customer | undefined };

const DAY_MS = 24 * 60 * 60 * 1000;
/** orders per read of the export: a bounded part of the list in memory */
const EXPORT_BATCH = 1000;
/** customers a search passes to the orders' query by id; more match a prefix so common that the newest-first walk finds them soon */
const SEARCH_CUSTOMERS = 1000;
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
/** The first instant after the range the API accepts (years 1–9999, UTC). */
const END_OF_RANGE_MS = Date.UTC(10000, 0, 1);

/** An order as an administrator reads it: its lines and every event of its history. */
export type OrderRecord = { order: OrderRow; lines: OrderLineView[]; events: OrderEventRow[] };

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

  /** Any order, whoever owns it, with its lines and events; 404 when there is no such order. */
  async get(id: number): Promise<OrderRecord> {
    const [found, events] = await Promise.all([findOrderWithLines(this.db, id), listOrderEvents(this.db, id)]);
    if (!found) throw new AppError('NOT_FOUND', 'Order not found');
    return { ...found, events };
  }
}
