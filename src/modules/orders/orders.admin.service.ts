import type { Db } from '../../db/database.ts';
import type { OrderEventRow, OrderRow, OrderStatus } from '../../db/schema.ts';
import { AppError, invalidQuery } from '../../http/errors.ts';
import { cappedPageOf, type CappedPageResult } from '../../http/common.schemas.ts';
import { findUserByEmail } from '../users/users.repository.ts';
import { findOrderWithLines, listOrderEvents, listOrders, type OrderFilter, type OrderLineView } from './orders.reads.repository.ts';
import type { AdminOrderListQuery } from './orders.schemas.ts';

const DAY_MS = 24 * 60 * 60 * 1000;
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
/** The first instant after the range the API accepts (years 1–9999, UTC). */
const END_OF_RANGE_MS = Date.UTC(10000, 0, 1);

/** An order as an administrator reads it: its lines and every event of its history. */
export interface OrderRecord {
  order: OrderRow;
  lines: OrderLineView[];
  events: OrderEventRow[];
}

/**
 * The creation-time filters, both inclusive: a date-time to the millisecond the API shows times in
 * (the database keeps microseconds), a date the whole of that UTC day.
 */
function timeRange(q: AdminOrderListQuery): Pick<OrderFilter, 'createdFrom' | 'createdBefore'> {
  const range: Pick<OrderFilter, 'createdFrom' | 'createdBefore'> = {};
  if (q.created_from !== undefined) range.createdFrom = new Date(DATE_ONLY.test(q.created_from) ? `${q.created_from}T00:00:00Z` : q.created_from);
  if (q.created_to !== undefined) {
    const to = DATE_ONLY.test(q.created_to) ? Date.parse(`${q.created_to}T00:00:00Z`) + DAY_MS : Date.parse(q.created_to) + 1;
    // the end of year 9999 (UTC) bounds nothing (no order is created later), and the step past it
    // makes year 10000, which PostgreSQL refuses: no upper bound then
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

  /** `statuses`: those the caller's status filter stands for in its API version (mappers' `statusesFor`). */
  async list(q: AdminOrderListQuery, statuses: OrderStatus[] | undefined): Promise<CappedPageResult<OrderRow>> {
    const userId = q.customer_email === undefined ? q.user_id : (await findUserByEmail(this.db, q.customer_email))?.id;
    // no user has that e-mail, or another user than `user_id` names has it: no order matches
    if (q.customer_email !== undefined && (userId === undefined || (q.user_id !== undefined && q.user_id !== userId))) {
      return cappedPageOf([], { total: 0, exact: true }, q.page, q.page_size);
    }
    const filter: OrderFilter = {
      statuses,
      userId,
      platform: q.source === undefined ? undefined : q.source === 'platform',
      externalId: q.external_id,
      ...timeRange(q),
    };
    const { rows, count } = await listOrders(this.db, filter, { limit: q.page_size, offset: (q.page - 1) * q.page_size });
    return cappedPageOf(rows, count, q.page, q.page_size);
  }

  /** Any order, whoever owns it, with its lines and events; 404 when there is no such order. */
  async get(id: number): Promise<OrderRecord> {
    const [found, events] = await Promise.all([findOrderWithLines(this.db, id), listOrderEvents(this.db, id)]);
    if (!found) throw new AppError('NOT_FOUND', 'Order not found');
    return { ...found, events };
  }
}
