import { sql, type Selectable } from 'kysely';
import { jsonArrayFrom } from 'kysely/helpers/postgres';
import { countCapped, type CappedCount } from '../../db/capped-count.ts';
import type { Db } from '../../db/database.ts';
import type { OrderEventRow, OrderItemsTable, OrderRow, OrderStatus } from '../../db/schema.ts';
import { customerIdsByPrefix } from '../users/customers.repository.ts';

export type OrderLineView = Omit<Selectable<OrderItemsTable>, 'order_id'>;

export async function findOrderWithLines(db: Db, id: number): Promise<{ order: OrderRow; lines: OrderLineView[] } | undefined> {
  return (await findOrdersWithLines(db, [id]))[0];
}

/** Orders (those of `ids` that exist, in no particular order) and their lines, in one round trip. */
export async function findOrdersWithLines(db: Db, ids: readonly number[]): Promise<{ order: OrderRow; lines: OrderLineView[] }[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('orders as o')
    .selectAll('o')
    .select((eb) =>
      jsonArrayFrom(
        eb
          .selectFrom('order_items as oi')
          // numeric as text: JSON would carry it as a double
          .select(['oi.id', 'oi.product_id', 'oi.product_name', 'oi.quantity', sql<string>`oi.unit_price::text`.as('unit_price')])
          .whereRef('oi.order_id', '=', 'o.id')
          .orderBy('oi.id'),
      ).as('lines'),
    )
    .where('o.id', 'in', [...ids])
    .execute();
  return rows.map(({ lines, ...order }) => ({ order, lines }));
}

/** A page of one user's orders, newest first, and how many: a count orders_user_created_idx (or orders_user_status_created_idx) serves. */
export async function listUserOrders(db: Db, f: { userId: number; statuses?: readonly OrderStatus[] }, page: { limit: number; offset: number }): Promise<{ rows: OrderRow[]; total: number }> {
  const mine = filtered(db, f);
  const count = mine.select((eb) => eb.fn.countAll<string>().as('total'));
  // one round trip: the count rides on each row of the page; only a page past the end asks for it alone
  const rows = await mine.selectAll().select(count.as('total')).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute();
  const total = rows.length > 0 ? rows[0].total : (await count.executeTakeFirstOrThrow()).total;
  return { rows, total: Number(total) };
}

export async function findOrderIdByExternalId(db: Db, source: string, externalId: string): Promise<number | undefined> {
  const row = await db.selectFrom('orders').select('id').where('source', '=', source).where('external_id', '=', externalId).executeTakeFirst();
  return row?.id;
}

export async function listOrderEvents(db: Db, orderId: number): Promise<OrderEventRow[]> {
  return db.selectFrom('order_events').selectAll().where('order_id', '=', orderId).orderBy('sequence', 'asc').execute();
}

/** The order filters, each one given narrowing the list; `customerPrefix`: the start of the owner's e-mail or name. */
export interface OrderFilter {
  statuses?: readonly OrderStatus[];
  userId?: number;
  userIds?: readonly number[];
  /** true: orders from an inbound platform (any source but the API); false: orders placed through the API */
  platform?: boolean;
  externalId?: string;
  createdFrom?: Date;
  createdBefore?: Date;
  id?: number;
  customerPrefix?: string;
}

function filtered(db: Db, f: OrderFilter) {
  let q = db.selectFrom('orders');
  if (f.statuses !== undefined) q = q.where('status', 'in', [...f.statuses]);
  if (f.userId !== undefined) q = q.where('user_id', '=', f.userId);
  if (f.userIds !== undefined) q = q.where(sql<boolean>`user_id = ANY(${f.userIds}::integer[])`);
  // `source <> 'api'` is the predicate of the platform orders' partial index
  if (f.platform === true) q = q.where('source', '<>', 'api');
  if (f.platform === false) q = q.where('source', '=', 'api');
  if (f.externalId !== undefined) q = q.where('external_id', '=', f.externalId);
  if (f.createdFrom !== undefined) q = q.where('created_at', '>=', f.createdFrom);
  if (f.createdBefore !== undefined) q = q.where('created_at', '<', f.createdBefore);
  if (f.id !== undefined) q = q.where('id', '=', f.id);
  if (f.customerPrefix !== undefined) q = q.where('user_id', 'in', customerIdsByPrefix(db, f.customerPrefix));
  return q;
}

/** A page of every user's orders that match `f`, newest first, and how many match, up to a cap. */
export async function listOrders(db: Db, f: OrderFilter, page: { limit: number; offset: number }): Promise<{ rows: OrderRow[]; count: CappedCount }> {
  // the page's ids come from an index alone; only their rows are read from the table, so a deep
  // page reads `limit` rows there, not `offset + limit` (orders of one status lie far apart)
  const ids = filtered(db, f).select('id').orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset);
  const [rows, count] = await Promise.all([
    db.selectFrom('orders').selectAll().where('id', 'in', ids).orderBy('created_at', 'desc').orderBy('id', 'desc').execute(),
    countCapped(db, filtered(db, f), page.offset + page.limit),
  ]);
  return { rows, count };
}

/** Every order that matches `f`, newest first, in batches read by keyset (created_at, id): each batch is one index range. */
export async function* orderBatches(db: Db, f: OrderFilter, size: number): AsyncGenerator<OrderRow[]> {
  // the last row's created_at as the database's text: a Date would drop its microseconds
  let after: { at: string; id: number } | undefined;
  for (;;) {
    let q = filtered(db, f).selectAll().select(sql<string>`created_at::text`.as('keyset_at'));
    if (after !== undefined) q = q.where(sql<boolean>`(created_at, id) < (${after.at}::timestamptz, ${after.id})`);
    const rows = await q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(size).execute();
    if (rows.length > 0) yield rows.map(({ keyset_at: _, ...order }) => order);
    if (rows.length < size) return;
    const last = rows[rows.length - 1];
    after = { at: last.keyset_at, id: last.id };
  }
}

/** The orders created in [from, to) per UTC hour or day and status, with their total, from orders_created_idx alone. */
export async function countOrdersPerBucket(
  db: Db,
  opts: { bucket: 'hour' | 'day'; from: Date; to: Date },
): Promise<{ start: Date; status: OrderStatus; orders: number; amount: string }[]> {
  // `AT TIME ZONE 'UTC'` to group by costs a third of date_trunc's time-zone argument
  const group = sql<Date>`date_trunc(${sql.lit(opts.bucket)}, created_at AT TIME ZONE 'UTC')`;
  const start = sql<Date>`${group} AT TIME ZONE 'UTC'`;
  const rows = await db
    .selectFrom('orders')
    .select((eb) => [start.as('start'), 'status', eb.fn.countAll<string>().as('orders'), sql<string>`sum(total_amount)::text`.as('amount')])
    .where('created_at', '>=', opts.from)
    .where('created_at', '<', opts.to)
    .groupBy([group, 'status'])
    .execute();
  return rows.map((r) => ({ start: new Date(r.start), status: r.status, orders: Number(r.orders), amount: r.amount }));
}

/** The products most often short in the failed orders created in [from, to), most first (orders_status_created_idx, then each event by key). */
export async function mostShortProducts(db: Db, opts: { from: Date; to: Date; limit: number }): Promise<{ product_id: number; failed_orders: number }[]> {
  const { rows } = await sql<{ product_id: number; failed_orders: string }>`
    SELECT line.product_id, count(DISTINCT o.id) AS failed_orders
    FROM orders o
    JOIN order_events e ON e.order_id = o.id AND e.status = 'failed'
    CROSS JOIN jsonb_to_recordset(e.details -> 'lines') AS line(product_id integer)
    WHERE o.status = 'failed' AND o.created_at >= ${opts.from} AND o.created_at < ${opts.to}
    GROUP BY line.product_id
    ORDER BY failed_orders DESC, line.product_id
    LIMIT ${opts.limit}
  `.execute(db);
  return rows.map((r) => ({ product_id: r.product_id, failed_orders: Number(r.failed_orders) }));
}

/** The orders not final yet, by status: a count that reads the partial index orders_open_idx only. */
export async function countOpenOrders(db: Db): Promise<Record<'pending' | 'processing', number>> {
  const rows = await db
    .selectFrom('orders')
    .select((eb) => ['status', eb.fn.countAll<string>().as('n')])
    .where('status', 'in', ['pending', 'processing'])
    .groupBy('status')
    .execute();
  const counts = { pending: 0, processing: 0 };
  for (const r of rows) if (r.status === 'pending' || r.status === 'processing') counts[r.status] = Number(r.n);
  return counts;
}

/** The newest event's id (0 with no event): where a live feed (src/modules/live/) that starts now begins; its reads are served by the primary key. */
export async function latestOrderEventId(db: Db): Promise<number> {
  const row = await db.selectFrom('order_events').select('id').orderBy('id', 'desc').limit(1).executeTakeFirst();
  return row?.id ?? 0;
}

/** Events after `after`, and those of `missing` (ids not seen yet below it), oldest first. */
export async function readOrderEventsAfter(db: Db, after: number, missing: readonly number[], limit: number): Promise<OrderEventRow[]> {
  return db
    .selectFrom('order_events')
    .selectAll()
    .where((eb) => (missing.length > 0 ? eb.or([eb('id', '>', after), eb('id', 'in', [...missing])]) : eb('id', '>', after)))
    .orderBy('id')
    .limit(limit)
    .execute();
}

/** Up to `limit` events after `after` (those of `userId`'s orders, when given), oldest first. */
export async function replayOrderEvents(db: Db, opts: { after: number; userId: number | undefined; limit: number }): Promise<OrderEventRow[]> {
  let q = db.selectFrom('order_events').selectAll().where('id', '>', opts.after);
  if (opts.userId !== undefined) q = q.where('user_id', '=', opts.userId);
  return q.orderBy('id').limit(opts.limit).execute();
}
