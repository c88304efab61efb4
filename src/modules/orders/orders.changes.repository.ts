import { sql, type Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database, OrderRow, OrderStatus } from '../../db/schema.ts';
import type { OrderEventOf } from '../../events/order-events.ts';
import { activeTraceparent, traceIdOf } from '../../jobs/job-tracing.ts';
import { lockProducts, productStatesQuery, type LockedProduct, type ProductState } from '../products/products.repository.ts';

/** The orders module's writes: every change of an order writes its numbered event, the outbox, in the same statement. */

export async function lockOrder(trx: Transaction<Database>, id: number): Promise<OrderRow | undefined> {
  return trx.selectFrom('orders').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
}

/** Locks the order rows of `ids` in id order (the lock order of docs/architecture.md). */
export async function lockOrders(trx: Transaction<Database>, ids: readonly number[]): Promise<void> {
  await trx.selectFrom('orders').select('id').where('id', 'in', [...ids]).orderBy('id').forUpdate().execute();
}

export interface NewOrder {
  userId: number;
  shippingAddress: string;
  lines: readonly { productId: number; quantity: number }[];
  /** 'api' (default) or an inbound platform, which knows the order by `externalId` */
  source?: string;
  externalId?: string | null;
}

/** Inserts a pending, unpriced order with its lines and `order.created` event if every product is active (else `order` is undefined). */
export async function insertOrder(trx: Transaction<Database>, input: NewOrder): Promise<{ order: OrderRow | undefined; products: ProductState[] }> {
  const productIds = input.lines.map((l) => l.productId);
  const distinct = new Set(productIds).size;
  const traceparent = activeTraceparent();
  const { rows } = await sql<{ [K in keyof OrderRow]: OrderRow[K] | null } & { products: ProductState[] | null }>`
    WITH p AS MATERIALIZED (${productStatesQuery(trx, productIds)}),
    o AS (
      INSERT INTO orders (user_id, status, total_amount, shipping_address, source, external_id, trace_id)
      SELECT ${input.userId}, 'pending', 0, ${input.shippingAddress}, ${input.source ?? 'api'}, ${input.externalId ?? null}, ${traceIdOf(traceparent)}
      WHERE (SELECT count(*) FROM p WHERE p.is_active) = ${distinct}
      RETURNING *
    ), lines AS (
      INSERT INTO order_items (order_id, product_id, product_name, quantity, unit_price)
      SELECT o.id, l.product_id, p.name, l.quantity, 0
      FROM o CROSS JOIN unnest(${productIds}::integer[], ${input.lines.map((l) => l.quantity)}::integer[]) WITH ORDINALITY AS l (product_id, quantity, n)
      JOIN p ON p.id = l.product_id
      ORDER BY l.n
    ), event AS (
      INSERT INTO order_events (order_id, user_id, type, previous_status, status, total_amount, sequence, traceparent)
      SELECT o.id, o.user_id, 'order.created', NULL, o.status, o.total_amount, 1, ${traceparent}::text FROM o
    )
    SELECT o.*, (SELECT json_agg(p) FROM p) AS products
    FROM (SELECT 1) AS one LEFT JOIN o ON true`.execute(trx);
  const { products, ...order } = rows[0];
  return { order: order.id === null ? undefined : (order as OrderRow), products: products ?? [] };
}

/** One order's move; `total` and `failureReason` (null clears it) change the order when given, `reason` and `details` go on the event. */
export interface StatusChange {
  id: number;
  from: OrderStatus;
  to: OrderStatus;
  total?: string;
  failureReason?: string | null;
  reason?: string | null;
  details?: unknown;
}

/** A product's price (exact decimal text) and name, as a completed order's lines take them. */
export type LinePrice = Pick<LockedProduct, 'id' | 'price' | 'name'>;

/**
 * Moves each order still in `from` to `to` with its event in one statement (a completed one's lines take `linePrices`); returns them by id.
 * Without the caller's locks the UPDATE takes them, and re-checks `from` on an order changed meanwhile.
 */
export async function changeStatuses(trx: Transaction<Database>, changes: readonly StatusChange[], linePrices: readonly LinePrice[]): Promise<OrderRow[]> {
  if (changes.length === 0) return [];
  const column = <T>(pick: (c: StatusChange) => T) => changes.map(pick);
  const { rows } = await sql<OrderRow>`
    WITH v AS MATERIALIZED (
      SELECT * FROM unnest(
        ${column((c) => c.id)}::integer[], ${column((c) => c.from)}::text[], ${column((c) => c.to)}::text[],
        ${column((c) => c.total ?? null)}::numeric[], ${column((c) => c.failureReason !== undefined)}::boolean[],
        ${column((c) => c.failureReason ?? null)}::text[], ${column((c) => c.reason ?? null)}::text[],
        ${column((c) => (c.details === undefined || c.details === null ? null : JSON.stringify(c.details)))}::jsonb[]
      ) AS v (id, from_status, to_status, total, sets_failure, failure_reason, reason, details)
    ), updated AS (
      UPDATE orders AS o SET status = v.to_status, updated_at = now(),
        total_amount = coalesce(v.total, o.total_amount),
        failure_reason = CASE WHEN v.sets_failure THEN v.failure_reason ELSE o.failure_reason END,
        cancelled_at = CASE WHEN v.to_status = 'cancelled' THEN now() ELSE o.cancelled_at END
      FROM v WHERE o.id = v.id AND o.status = v.from_status
      RETURNING o.*
    ), priced AS (
      UPDATE order_items AS oi SET unit_price = p.price, product_name = p.name
      FROM unnest(${linePrices.map((p) => p.id)}::integer[], ${linePrices.map((p) => p.price)}::numeric[], ${linePrices.map((p) => p.name)}::text[]) AS p (id, price, name)
      WHERE oi.order_id IN (SELECT id FROM updated WHERE status = 'completed') AND oi.product_id = p.id
    ), event AS (
      INSERT INTO order_events (order_id, user_id, type, previous_status, status, total_amount, reason, details, sequence, traceparent)
      SELECT u.id, u.user_id, 'order.status_changed', v.from_status, u.status, u.total_amount, v.reason, v.details,
             (SELECT coalesce(max(e.sequence), 0) + 1 FROM order_events AS e WHERE e.order_id = u.id), ${activeTraceparent()}::text
      FROM updated AS u JOIN v ON v.id = u.id
    )
    SELECT * FROM updated ORDER BY id`.execute(trx);
  return rows;
}

/** The units an order wants of one product (its lines of that product summed). */
export interface ProductDemand {
  productId: number;
  quantity: number;
}

type LockedOrder = { id: number; status: OrderStatus; demand: ProductDemand[] };

/** Locks the orders of `ids`, then the products of those in `status`, each in id order (docs/architecture.md's lock order). */
export async function lockOrdersWithProducts(
  trx: Transaction<Database>,
  ids: readonly number[],
  status: OrderStatus,
): Promise<{ orders: LockedOrder[]; products: LockedProduct[] }> {
  const { rows } = await sql<{ id: number; status: OrderStatus; product_id: number | null; quantity: number | null }>`
    WITH o AS MATERIALIZED (SELECT id, status FROM orders WHERE id = ANY(${[...ids]}::integer[]) ORDER BY id FOR UPDATE)
    SELECT o.id, o.status, i.product_id, sum(i.quantity)::integer AS quantity
    FROM o LEFT JOIN order_items AS i ON i.order_id = o.id
    GROUP BY o.id, o.status, i.product_id
    ORDER BY o.id, i.product_id`.execute(trx);
  const orders = new Map<number, LockedOrder>();
  for (const row of rows) {
    const order = orders.get(row.id) ?? { id: row.id, status: row.status, demand: [] };
    orders.set(row.id, order);
    if (row.product_id !== null) order.demand.push({ productId: row.product_id, quantity: row.quantity! });
  }
  const wanted = [...orders.values()].filter((o) => o.status === status).flatMap((o) => o.demand.map((d) => d.productId));
  return { orders: [...orders.values()], products: await lockProducts(trx, [...new Set(wanted)]) };
}

/** True when the order went back to `pending` (a retry) after `since`, so a job created before is stale. */
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

/** The first key of the publishing lock: two keys never collide with pg-boss's single-key advisory locks. */
const PUBLISHING_LOCK = -17;

/** Unpublished events, oldest first, under the publishing lock: one publisher at a time keeps each order's events in sequence. */
export async function unpublishedEvents(trx: Transaction<Database>, limit: number): Promise<OrderEventOf[]> {
  await sql`SELECT pg_advisory_xact_lock(${PUBLISHING_LOCK}::int, 0)`.execute(trx);
  const rows = await trx
    .selectFrom('order_events as e')
    .innerJoin('orders as o', 'o.id', 'e.order_id')
    .selectAll('e')
    .select(['o.source', 'o.external_id'])
    .where('e.published', '=', false)
    .orderBy('e.id')
    .limit(limit)
    .execute();
  return rows.map(({ source, external_id, ...event }) => ({ event, order: { id: event.order_id, source, external_id } }));
}

/** Marks events as handed to the listeners, in the transaction of what they wrote. */
export async function markPublished(trx: Transaction<Database>, ids: readonly number[]): Promise<void> {
  if (ids.length > 0) await trx.updateTable('order_events').set({ published: true }).where('id', 'in', [...ids]).execute();
}

/** The responses stored under an `Idempotency-Key` of `POST /orders` (201s only), kept 24 h. */
const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

export async function findIdempotencyKey(db: Db, userId: number, key: string): Promise<{ request_hash: string; response_body: unknown } | undefined> {
  return db
    .selectFrom('idempotency_keys')
    .select(['request_hash', 'response_body'])
    .where('user_id', '=', userId)
    .where('key', '=', key)
    .where('expires_at', '>', new Date())
    .executeTakeFirst();
}

/** Stores the 201 under the key, replacing an expired row; false for a live row (a concurrent duplicate waits here, then sees it). */
export async function saveIdempotencyKey(trx: Transaction<Database>, userId: number, key: string, requestHash: string, body: unknown): Promise<boolean> {
  const now = new Date();
  const response = {
    request_hash: requestHash,
    response_status: 201,
    response_body: JSON.stringify(body),
    created_at: now,
    expires_at: new Date(now.getTime() + IDEMPOTENCY_TTL_MS),
  };
  const saved = await trx
    .insertInto('idempotency_keys')
    .values({ user_id: userId, key, ...response })
    .onConflict((oc) => oc.columns(['user_id', 'key']).doUpdateSet(response).where('idempotency_keys.expires_at', '<=', new Date()))
    .returning('key')
    .executeTakeFirst();
  return saved !== undefined;
}

export async function purgeExpiredIdempotencyKeys(db: Db): Promise<number> {
  const result = await db.deleteFrom('idempotency_keys').where('expires_at', '<=', new Date()).executeTakeFirst();
  return Number(result.numDeletedRows);
}
