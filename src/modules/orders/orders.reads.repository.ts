import { sql, type Expression, type ExpressionBuilder, type Transaction } from 'kysely';
import { compileOnce } from '../../db/compiled.ts';
import type { Db } from '../../db/database.ts';
import { jsonArrayText } from '../../db/json-text.ts';
import type { Database, OrderEventRow, OrderRow, OrderStatus } from '../../db/schema.ts';
import type { ApiVersion } from '../../http/api-version.ts';
import { orderDetailSql, orderSummarySql } from './orders.mapper.ts';

/** The orders module's reads: one order, a user's pages, every order for administrators, counters. */

export interface OrderLineView {
  id: number;
  product_id: number;
  product_name: string;
  quantity: number;
  unit_price: string;
}

/** The order's status as committed now, without a lock (undefined: no such order). */
export async function findOrderStatus(db: Db | Transaction<Database>, id: number): Promise<OrderStatus | undefined> {
  return (await db.selectFrom('orders').select('status').where('id', '=', id).executeTakeFirst())?.status;
}

const orderWithLines = compileOnce((db, a: { id: number }) =>
  db
    .selectFrom('orders as o')
    .selectAll('o')
    .select(
      sql<OrderLineView[]>`coalesce((
        SELECT json_agg(json_build_object(
          'id', oi.id, 'product_id', oi.product_id, 'quantity', oi.quantity,
          'unit_price', oi.unit_price::text, 'product_name', oi.product_name
        ) ORDER BY oi.id)
        FROM order_items oi
        WHERE oi.order_id = o.id
      ), '[]'::json)`.as('lines'),
    )
    .where('o.id', '=', a.id),
);

/** An order and its lines in one round trip (the lines as a JSON array, in line order). */
export async function findOrderWithLines(db: Db, id: number): Promise<{ order: OrderRow; lines: OrderLineView[] } | undefined> {
  const [row] = await orderWithLines(db, { id });
  if (!row) return undefined;
  const { lines, ...order } = row;
  return { order, lines };
}
function orderDetailJsonQuery(version: ApiVersion) {
  const columns = orderDetailSql(version);
  return compileOnce((db, a: { id: number }) =>
    db
      .selectFrom('orders')
      .innerJoinLateral(db.selectNoFrom(columns).as('detail'), (join) => join.onTrue())
      .select(['orders.user_id', sql<string>`row_to_json(detail)::text`.as('json')])
      .where('orders.id', '=', a.id),
  );
}

const orderDetailJson = { v1: orderDetailJsonQuery('v1'), v2: orderDetailJsonQuery('v2') };

/**
 * An order with its lines, rendered by PostgreSQL as the JSON text of the `version` API's order
 * detail (`orderDetailSql`), and its owner, in one round trip. The API process reads back those two
 * columns only and runs no serializer for it.
 */
export async function findOrderDetailJson(db: Db, version: ApiVersion, id: number): Promise<{ userId: number; json: string } | undefined> {
  const [row] = await orderDetailJson[version](db, { id });
  return row && { userId: row.user_id, json: row.json };
}

interface OrderPageArgs extends Record<string, unknown> {
  userId: number;
  statuses: OrderStatus[];
  limit: number;
  offset: number;
}

/**
 * One user's orders (all of them, or those in any of `statuses`) by their `user_id` and `status`
 * columns: in `orders` for the page, in their counter rows for the count.
 */
function ownOrders(filtered: boolean) {
  return <T extends 'orders' | 'user_order_counts'>(eb: ExpressionBuilder<Database, T>, a: OrderPageArgs) => {
    // both tables have the two columns; Kysely's types cannot see a column common to a table union
    const ref = eb.ref as (column: string) => Expression<unknown>;
    const mine = eb(ref('user_id'), '=', a.userId);
    return filtered ? eb.and([mine, sql<boolean>`${ref('status')} = ANY(${a.statuses}::text[])`]) : mine;
  };
}

/**
 * A page of one user's orders, newest first, rendered by PostgreSQL as the JSON text of the
 * `version` API's order summaries (`orderSummarySql`), and the count of all of them, from the
 * counter rows the orders' trigger keeps: one statement that always answers one row, past the end
 * of the list too. The objects are joined in the order of the rows they render: their timestamps
 * are cut to the millisecond, so they could not order the page exactly themselves.
 */
function orderPageJsonQuery(filtered: boolean, version: ApiVersion) {
  const mine = ownOrders(filtered);
  const columns = orderSummarySql(version);
  return compileOnce((db, a: OrderPageArgs) => {
    // the page first, then its rendering: rows that the offset skips are never rendered
    const page = db
      .selectFrom('orders')
      .selectAll()
      .where((eb) => mine(eb, a))
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(a.limit)
      .offset(a.offset)
      .as('orders');
    const count = db
      .selectFrom('user_order_counts')
      .select(sql<string>`coalesce(sum(total), 0)`.as('total'))
      .where((eb) => mine(eb, a));
    return db
      .selectFrom(page)
      .innerJoinLateral(db.selectNoFrom(columns).as('summary'), (join) => join.onTrue())
      .select([count.as('total'), jsonArrayText('summary', sql`orders.created_at DESC, orders.id DESC`).as('json')]);
  });
}

const orderPageJson = {
  v1: { all: orderPageJsonQuery(false, 'v1'), some: orderPageJsonQuery(true, 'v1') },
  v2: { all: orderPageJsonQuery(false, 'v2'), some: orderPageJsonQuery(true, 'v2') },
};

/**
 * A page of one user's orders as the JSON text of the `version` API's summaries (the page's
 * `items`), and the count of all of them. `statuses`: the orders in any of them (undefined: every order).
 */
export async function listUserOrdersJson(
  db: Db,
  version: ApiVersion,
  opts: { userId: number; statuses: readonly OrderStatus[] | undefined; limit: number; offset: number },
): Promise<{ json: string; total: number }> {
  const query = orderPageJson[version][opts.statuses === undefined ? 'all' : 'some'];
  const [row] = await query(db, { userId: opts.userId, statuses: [...(opts.statuses ?? [])], limit: opts.limit, offset: opts.offset });
  return { json: row.json, total: Number(row.total) };
}

/** The id of the order a platform knows by `externalId`, if it exists. */
export async function findOrderIdByExternalId(db: Db, source: string, externalId: string): Promise<number | undefined> {
  const row = await db.selectFrom('orders').select('id').where('source', '=', source).where('external_id', '=', externalId).executeTakeFirst();
  return row?.id;
}

/** An order's events, oldest first. */
export async function listOrderEvents(db: Db, orderId: number): Promise<OrderEventRow[]> {
  return db.selectFrom('order_events').selectAll().where('order_id', '=', orderId).orderBy('sequence', 'asc').execute();
}

/** The administrators' order filters; each one given narrows the list. */
export interface OrderFilter {
  /** orders in any of these statuses */
  statuses?: readonly OrderStatus[];
  userId?: number;
  /** true: orders from an inbound platform (any source but the API); false: orders placed through the API */
  platform?: boolean;
  externalId?: string;
  /** created at or after */
  createdFrom?: Date;
  /** created before */
  createdBefore?: Date;
}

function filtered(db: Db, f: OrderFilter) {
  let q = db.selectFrom('orders');
  if (f.statuses !== undefined) q = q.where('status', 'in', [...f.statuses]);
  if (f.userId !== undefined) q = q.where('user_id', '=', f.userId);
  // `source <> 'api'` is the predicate of the platform orders' partial index
  if (f.platform === true) q = q.where('source', '<>', 'api');
  if (f.platform === false) q = q.where('source', '=', 'api');
  if (f.externalId !== undefined) q = q.where('external_id', '=', f.externalId);
  if (f.createdFrom !== undefined) q = q.where('created_at', '>=', f.createdFrom);
  if (f.createdBefore !== undefined) q = q.where('created_at', '<', f.createdBefore);
  return q;
}

/**
 * The number of orders a filter selects. By status and origin alone (or no filter) it is the sum of
 * the trigger-kept counters, constant time however many orders exist; any other filter is counted
 * through its index (a user's orders, one platform id, a creation-time range).
 */
async function countOrders(db: Db, f: OrderFilter): Promise<number> {
  const countersSuffice = f.userId === undefined && f.externalId === undefined && f.createdFrom === undefined && f.createdBefore === undefined;
  if (countersSuffice) {
    let q = db.selectFrom('order_counts').select((eb) => eb.fn.coalesce(eb.fn.sum<string>('total'), eb.lit(0)).as('total'));
    if (f.statuses !== undefined) q = q.where('status', 'in', [...f.statuses]);
    if (f.platform !== undefined) q = q.where('platform', '=', f.platform);
    return Number((await q.executeTakeFirstOrThrow()).total);
  }
  const row = await filtered(db, f)
    .select((eb) => eb.fn.countAll<number>().as('total'))
    .executeTakeFirstOrThrow();
  return Number(row.total);
}

/** A page of every user's orders that match `f`, newest first, and how many match. */
export async function listOrders(db: Db, f: OrderFilter, page: { limit: number; offset: number }): Promise<{ rows: OrderRow[]; total: number }> {
  const [rows, total] = await Promise.all([
    filtered(db, f).selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute(),
    countOrders(db, f),
  ]);
  return { rows, total };
}

/** Order events since the start, by the status they moved to (every status present, 0 when none). */
export async function countTransitionsByStatus(db: Db): Promise<Record<OrderStatus, number>> {
  const rows = await db
    .selectFrom('order_transition_counts')
    .select((eb) => ['status', eb.fn.sum<string>('total').as('total')])
    .groupBy('status')
    .execute();
  const counts: Record<OrderStatus, number> = { pending: 0, processing: 0, completed: 0, failed: 0, cancelled: 0 };
  for (const r of rows) counts[r.status] = Number(r.total);
  return counts;
}