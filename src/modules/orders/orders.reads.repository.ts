import { sql } from 'kysely';
import { jsonArrayFrom } from 'kysely/helpers/postgres';
import { countCapped, type CappedCount } from '../../db/capped-count.ts';
import type { Db } from '../../db/database.ts';
import type { OrderEventRow, OrderRow, OrderStatus } from '../../db/schema.ts';

/** The orders module's reads: one order, a user's pages, every order for administrators, the open orders. */

export interface OrderLineView {
  id: number;
  product_id: number;
  product_name: string;
  quantity: number;
  unit_price: string;
}

/** The order's status as committed now, without a lock (undefined: no such order). */
export async function findOrderStatus(db: Db, id: number): Promise<OrderStatus | undefined> {
  return (await db.selectFrom('orders').select('status').where('id', '=', id).executeTakeFirst())?.status;
}

/** An order and its lines (in line order) in one round trip; undefined when there is no such order. */
export async function findOrderWithLines(db: Db, id: number): Promise<{ order: OrderRow; lines: OrderLineView[] } | undefined> {
  const row = await db
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
    .where('o.id', '=', id)
    .executeTakeFirst();
  if (!row) return undefined;
  const { lines, ...order } = row;
  return { order, lines };
}

/**
 * A page of one user's orders (those in any of `statuses`, when given), newest first, and how many
 * there are: a count orders_user_created_idx (or orders_user_status_created_idx) serves.
 */
export async function listUserOrders(
  db: Db,
  opts: { userId: number; statuses: readonly OrderStatus[] | undefined; limit: number; offset: number },
): Promise<{ rows: OrderRow[]; total: number }> {
  const mine = filtered(db, { userId: opts.userId, statuses: opts.statuses });
  const [rows, count] = await Promise.all([
    mine.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(opts.limit).offset(opts.offset).execute(),
    mine.select((eb) => eb.fn.countAll<string>().as('total')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.total) };
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

/** The order filters (the administrators' list has them all); each one given narrows the list. */
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

/** A page of every user's orders that match `f`, newest first, and how many match, up to a cap. */
export async function listOrders(db: Db, f: OrderFilter, page: { limit: number; offset: number }): Promise<{ rows: OrderRow[]; count: CappedCount }> {
  const [rows, count] = await Promise.all([
    filtered(db, f).selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute(),
    countCapped(db, filtered(db, f), page.offset + page.limit),
  ]);
  return { rows, count };
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
