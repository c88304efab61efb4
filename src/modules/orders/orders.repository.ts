import { sql, type ExpressionBuilder, type Kysely, type Transaction, type Updateable } from 'kysely';
import { compileOnce } from '../../db/compiled.ts';
import type { Database, OrderRow, OrderStatus, OrdersTable } from '../../db/schema.ts';

type Executor = Kysely<Database>;

export interface OrderLineView {
  id: number;
  product_id: number;
  product_name: string;
  quantity: number;
  unit_price: string;
}

/** The order row, locked until `trx` ends: every status change goes through this lock. */
export async function lockOrder(trx: Transaction<Database>, id: number): Promise<OrderRow | undefined> {
  return trx.selectFrom('orders').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
}

const orderWithLines = compileOnce((db, a: { id: number }) =>
  db
    .selectFrom('orders as o')
    .selectAll('o')
    .select(
      sql<OrderLineView[]>`coalesce((
        SELECT json_agg(json_build_object(
          'id', oi.id, 'product_id', oi.product_id, 'quantity', oi.quantity,
          'unit_price', oi.unit_price::text, 'product_name', coalesce(oi.product_name, p.name)
        ) ORDER BY oi.id)
        FROM order_items oi JOIN products p ON p.id = oi.product_id
        WHERE oi.order_id = o.id
      ), '[]'::json)`.as('lines'),
    )
    .where('o.id', '=', a.id),
);

/** An order and its lines in one round trip (the lines as a JSON array, in line order). */
export async function findOrderWithLines(db: Executor, id: number): Promise<{ order: OrderRow; lines: OrderLineView[] } | undefined> {
  const [row] = await orderWithLines(db, { id });
  if (!row) return undefined;
  const { lines, ...order } = row;
  return { order, lines };
}

interface OrderPageArgs extends Record<string, unknown> {
  userId: number;
  status: OrderStatus;
  limit: number;
  offset: number;
}

/** One user's orders (of one status, or all of them): where both the page and its count look. */
function ownOrders(withStatus: boolean) {
  return (eb: ExpressionBuilder<Database, 'orders'>, a: OrderPageArgs) =>
    eb.and([eb('orders.user_id', '=', a.userId), ...(withStatus ? [eb('orders.status', '=', a.status)] : [])]);
}

function orderCountQuery(withStatus: boolean) {
  const mine = ownOrders(withStatus);
  return (db: Executor, a: OrderPageArgs) =>
    db.selectFrom('orders').select((eb) => eb.fn.countAll<number>().as('total')).where((eb) => mine(eb, a));
}

function orderPageQuery(withStatus: boolean) {
  const mine = ownOrders(withStatus);
  const count = orderCountQuery(withStatus);
  return compileOnce((db, a: OrderPageArgs) =>
    db
      .selectFrom('orders')
      .selectAll()
      .where((eb) => mine(eb, a))
      .select(() => count(db, a).as('total'))
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(a.limit)
      .offset(a.offset),
  );
}

// by whether a status is asked for: one compiled statement per shape
const orderPage = { all: orderPageQuery(false), ofStatus: orderPageQuery(true) };
const orderCount = { all: compileOnce(orderCountQuery(false)), ofStatus: compileOnce(orderCountQuery(true)) };

/**
 * A page of one user's orders, newest first, and their count, in one round trip: the count is an
 * uncorrelated subquery, which PostgreSQL runs once (both are served by the user/status indexes).
 * A page past the end has no row to carry the count, so only then is it asked for on its own.
 */
export async function listUserOrders(
  db: Executor,
  opts: { userId: number; status: OrderStatus | undefined; limit: number; offset: number },
): Promise<{ rows: OrderRow[]; total: number }> {
  const shape = opts.status === undefined ? 'all' : 'ofStatus';
  // the shape without a status filter has no parameter for it: any status will do
  const args = { ...opts, status: opts.status ?? 'pending' };
  const page = await orderPage[shape](db, args);
  if (page.length === 0) {
    const total = opts.offset === 0 ? 0 : Number((await orderCount[shape](db, args))[0].total);
    return { rows: [], total };
  }
  // the rows keep their `total` column: the mapper picks the fields it shows, and copying 20 rows
  // without it cost about as much as the mapping itself
  return { rows: page, total: Number(page[0].total) };
}

export async function updateOrder(trx: Transaction<Database>, id: number, patch: Updateable<OrdersTable>): Promise<OrderRow> {
  return trx.updateTable('orders').set(patch).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

/** One product an order wants: its locked row's state and price, and the units of all its lines. */
export interface ProductDemand {
  id: number;
  stock: number;
  is_active: boolean;
  /** numeric(12,2) as exact decimal text */
  price: string;
  quantity: number;
}

/**
 * Locks the products of an order's lines, in id order, and returns each with the units the order
 * wants (lines of the same product summed). One round trip. The id order means concurrent jobs
 * always take their locks in the same order. FOR NO KEY UPDATE (the lock an UPDATE of stock takes
 * anyway), not FOR UPDATE: it does not conflict with the KEY SHARE locks that inserting order lines
 * takes on their products through the foreign key, so creating an order never waits for (or
 * deadlocks with) the processing of another one.
 */
export async function lockOrderProducts(trx: Transaction<Database>, orderId: number): Promise<ProductDemand[]> {
  // the summed quantity is cast to integer, which both drivers return as a number
  const { rows } = await sql<ProductDemand>`
    SELECT p.id, p.stock, p.is_active, p.price::text AS price, d.quantity
    FROM products AS p
    JOIN (SELECT product_id, sum(quantity)::integer AS quantity FROM order_items WHERE order_id = ${orderId} GROUP BY product_id) AS d
      ON d.product_id = p.id
    ORDER BY p.id
    FOR NO KEY UPDATE OF p
  `.execute(trx);
  return rows;
}

/**
 * Copies the current price and name of each product into the order's lines and takes the order's
 * units out of stock, in one statement; the products are already locked and checked.
 */
export async function priceLinesAndReserveStock(trx: Transaction<Database>, orderId: number): Promise<void> {
  await sql`
    WITH priced AS (
      UPDATE order_items AS oi SET unit_price = p.price, product_name = p.name
      FROM products AS p
      WHERE oi.product_id = p.id AND oi.order_id = ${orderId}
    )
    UPDATE products AS p SET stock = p.stock - d.quantity, updated_at = now()
    FROM (SELECT product_id, sum(quantity) AS quantity FROM order_items WHERE order_id = ${orderId} GROUP BY product_id) AS d
    WHERE p.id = d.product_id
  `.execute(trx);
}

export interface IdempotentResponse {
  request_hash: string;
  response_status: number;
  response_body: unknown;
}

export async function findIdempotencyKey(db: Executor, userId: number, key: string): Promise<IdempotentResponse | undefined> {
  return db
    .selectFrom('idempotency_keys')
    .select(['request_hash', 'response_status', 'response_body'])
    .where('user_id', '=', userId)
    .where('key', '=', key)
    .where('expires_at', '>', new Date())
    .executeTakeFirst();
}

/**
 * Stores the response under the key. A live row for the same key makes this return false (a
 * concurrent duplicate waits here for the first transaction and then sees its row); an expired one
 * is replaced.
 */
export async function saveIdempotencyKey(
  trx: Transaction<Database>,
  row: { userId: number; key: string; requestHash: string; status: number; body: unknown; expiresAt: Date },
): Promise<boolean> {
  const values = {
    user_id: row.userId,
    key: row.key,
    request_hash: row.requestHash,
    response_status: row.status,
    response_body: JSON.stringify(row.body),
    created_at: new Date(),
    expires_at: row.expiresAt,
  };
  const saved = await trx
    .insertInto('idempotency_keys')
    .values(values)
    .onConflict((oc) =>
      oc
        .columns(['user_id', 'key'])
        .doUpdateSet({
          request_hash: values.request_hash,
          response_status: values.response_status,
          response_body: values.response_body,
          created_at: values.created_at,
          expires_at: values.expires_at,
        })
        .where('idempotency_keys.expires_at', '<=', new Date()),
    )
    .returning('key')
    .executeTakeFirst();
  return saved !== undefined;
}

export async function purgeExpiredIdempotencyKeys(db: Executor): Promise<number> {
  const result = await db.deleteFrom('idempotency_keys').where('expires_at', '<=', new Date()).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * True when the order went back to `pending` (POST /orders/{id}/retry) after `since`: a job created
 * before then stands for an earlier round of processing.
 */
export async function requeuedSince(trx: Transaction<Database>, orderId: number, since: Date): Promise<boolean> {
  const row = await trx
    .selectFrom('order_events')
    .select('id')
    .where('order_id', '=', orderId)
    .where('status', '=', 'pending')
    .where('created_at', '>', since)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}
