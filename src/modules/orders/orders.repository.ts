import { sql, type Compilable, type Expression, type ExpressionBuilder, type Kysely, type RawBuilder, type Transaction, type Updateable } from 'kysely';
import { addPartArgs, buildPart, compileByShape, compileOnce, compilePaged, type SqlPart } from '../../db/compiled.ts';
import { jsonArrayText } from '../../db/json-text.ts';
import { THEN_COMMIT } from '../../db/prepared.ts';
import type { Database, OrderEventRow, OrderRow, OrderStatus, OrdersTable } from '../../db/schema.ts';
import type { OrderEventBus, OrderEventPreview, OrderEventType } from '../../events/order-events.ts';
import type { ApiVersion } from '../../http/api-version.ts';
import type { ProductState } from '../products/products.repository.ts';
import type { Db } from '../../db/database.ts';
import { orderDetailSql, orderSummarySql } from './orders.mapper.ts';

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

/** The order's status as committed now, without a lock (undefined: no such order). */
export async function findOrderStatus(db: Db | Transaction<Database>, id: number): Promise<OrderStatus | undefined> {
  return (await db.selectFrom('orders').select('status').where('id', '=', id).executeTakeFirst())?.status;
}

/** SQL for the owner of order `id`, for a statement that finds the order itself (owners never change). */
function ownerOf(id: number): RawBuilder<number> {
  return sql<number>`(SELECT user_id FROM orders WHERE id = ${id})`;
}

/**
 * SQL for the number of order `orderId`'s next event (a value, or a column of the statement): one
 * past its last in the statement's snapshot. The statement that writes the event holds the order's
 * row, or its UPDATE takes it (see `updateOrderWithEvent`).
 */
function nextEventSequence(orderId: unknown): RawBuilder<number> {
  return sql<number>`(SELECT coalesce(max(e.sequence), 0) + 1 FROM order_events e WHERE e.order_id = ${orderId})`;
}

/** The units an order wants of one product (its lines of that product summed). */
export interface ProductDemand {
  productId: number;
  quantity: number;
}

/**
 * An order's demand: one row per product (`productId`, and `quantity`, its lines of that product
 * summed, cast to integer, which both drivers return as a number). `orderId` is a value or a column.
 */
function demandRows(orderId: number | RawBuilder<unknown>): RawBuilder<ProductDemand> {
  return sql<ProductDemand>`
    SELECT product_id AS "productId", sum(quantity)::integer AS quantity
    FROM order_items WHERE order_id = ${orderId} GROUP BY product_id`;
}

/**
 * The order row, locked until `trx` ends (as `lockOrder`), with what it wants of each product (as
 * `orderDemand`), and, when the order is in `status`, its products locked by `lockProducts` (a query
 * of the products module's, given the ids of the order's products and the condition), in one round
 * trip. The order's lock comes first: the condition reads the locked row, so every product lock
 * follows it, in the order a cancellation takes them (the order, then its products), and an order
 * in another status locks no product. The demand is read in the same statement: an order's lines
 * never change their product or quantity after it is placed.
 */
export async function lockOrderWithProducts<P>(
  trx: Transaction<Database>,
  id: number,
  status: OrderStatus,
  lockProducts: (ids: RawBuilder<unknown>, when: RawBuilder<boolean>) => RawBuilder<P>,
): Promise<{ order: OrderRow; demand: ProductDemand[]; products: P[] } | undefined> {
  const products = lockProducts(sql`SELECT product_id FROM order_items WHERE order_id = ${id}`, sql<boolean>`(SELECT status FROM o) = ${status}`);
  const { rows } = await sql<OrderRow & { demand: ProductDemand[]; products: P[] }>`
    WITH o AS MATERIALIZED (SELECT * FROM orders WHERE id = ${id} FOR UPDATE),
    p AS MATERIALIZED (${products})
    SELECT o.*,
      coalesce((SELECT json_agg(d ORDER BY d."productId") FROM (${demandRows(sql.ref('o.id'))}) d), '[]'::json) AS demand,
      coalesce((SELECT json_agg(p) FROM p), '[]'::json) AS products
    FROM o
  `.execute(trx);
  if (rows.length === 0) return undefined;
  const { demand, products: locked, ...order } = rows[0];
  return { order: order as OrderRow, demand, products: locked };
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
 * columns only and runs no serializer for it (bench/README.md, finding 48).
 */
export async function findOrderDetailJson(db: Db, version: ApiVersion, id: number): Promise<{ userId: number; json: string } | undefined> {
  const [row] = await orderDetailJson[version](db, { id });
  return row && { userId: row.user_id, json: row.json };
}

interface OrderPageArgs extends Record<string, unknown> {
  userId: number;
  status: OrderStatus;
  statuses: OrderStatus[];
  limit: number;
  offset: number;
}

/** How a page of one user's orders is filtered by status: not at all, one status, or any of several. */
type StatusShape = 'all' | 'ofStatus' | 'ofStatuses';

/**
 * One user's orders (of one status, any of several, or all of them), by their `user_id` and
 * `status` columns: in `orders` for the page, in their counter rows for the count.
 */
function ownOrders(shape: StatusShape) {
  return <T extends 'orders' | 'user_order_counts'>(eb: ExpressionBuilder<Database, T>, a: OrderPageArgs) => {
    // both tables have the two columns; Kysely's types cannot see a column common to a table union
    const ref = eb.ref as (column: string) => Expression<unknown>;
    return eb.and([
      eb(ref('user_id'), '=', a.userId),
      ...(shape === 'ofStatus' ? [eb(ref('status'), '=', a.status)] : []),
      ...(shape === 'ofStatuses' ? [sql<boolean>`${ref('status')} = ANY(${a.statuses}::text[])`] : []),
    ]);
  };
}

/** The count of a user's orders (in the statuses of `shape`), from the counter rows the orders' trigger keeps. */
function orderCountQuery(shape: StatusShape) {
  const mine = ownOrders(shape);
  return (db: Db, a: OrderPageArgs) =>
    db
      .selectFrom('user_order_counts')
      .select(sql<string>`coalesce(sum(total), 0)`.as('total'))
      .where((eb) => mine(eb, a));
}

// by how the status is filtered: one compiled statement per shape
const SHAPES: readonly StatusShape[] = ['all', 'ofStatus', 'ofStatuses'];

/**
 * A page of one user's orders, newest first, rendered by PostgreSQL as the JSON text of the
 * `version` API's order summaries (`orderSummarySql`), and the count of all of them: one statement
 * that always answers one row, past the end of the list too. The count is an uncorrelated
 * subquery over the user's counter rows (`user_order_counts`), which PostgreSQL runs once. The API
 * process parses no rows and runs no serializer for the page (bench/README.md, finding 48).
 * The page is cut from the user's first orders up to its reach, a literal (`compilePaged`), so the
 * prepared statement keeps one generic plan however many orders the user has.
 * The objects are joined in the order of the rows they render: their timestamps are cut to the
 * millisecond, so they could not order the page exactly themselves.
 */
function orderPageJsonQuery(shape: StatusShape, version: ApiVersion) {
  const mine = ownOrders(shape);
  const count = orderCountQuery(shape);
  const columns = orderSummarySql(version);
  return compilePaged((db, a: OrderPageArgs, reach) => {
    // the page first, then its rendering: rows that the offset skips are never rendered
    const reached = db
      .selectFrom('orders')
      .selectAll()
      .where((eb) => mine(eb, a))
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(reach)
      .as('reached');
    const page = db
      .selectFrom(reached)
      .selectAll()
      .orderBy('reached.created_at', 'desc')
      .orderBy('reached.id', 'desc')
      .limit(a.limit)
      .offset(a.offset)
      .as('orders');
    return db
      .selectFrom(page)
      .innerJoinLateral(db.selectNoFrom(columns).as('summary'), (join) => join.onTrue())
      .select([
        count(db, a).as('total'),
        jsonArrayText('summary', sql`orders.created_at DESC, orders.id DESC`).as('json'),
      ]);
  });
}

const orderPageJson = Object.fromEntries(
  (['v1', 'v2'] as const).map((version) => [version, Object.fromEntries(SHAPES.map((shape) => [shape, orderPageJsonQuery(shape, version)]))]),
) as Record<ApiVersion, Record<StatusShape, ReturnType<typeof orderPageJsonQuery>>>;

/**
 * A page of one user's orders as the JSON text of the `version` API's summaries (the page's
 * `items`), and the count of all of them. `statuses`: the orders in any of them (undefined: every order).
 */
export async function listUserOrdersJson(
  db: Db,
  version: ApiVersion,
  opts: { userId: number; statuses: readonly OrderStatus[] | undefined; limit: number; offset: number },
): Promise<{ json: string; total: number }> {
  const statuses = opts.statuses === undefined ? undefined : [...opts.statuses];
  const shape: StatusShape = statuses === undefined ? 'all' : statuses.length === 1 ? 'ofStatus' : 'ofStatuses';
  // a shape has no parameter for what it does not filter on: any value will do
  const args: OrderPageArgs = { userId: opts.userId, limit: opts.limit, offset: opts.offset, status: statuses?.[0] ?? 'pending', statuses: statuses ?? [] };
  const [row] = await orderPageJson[version][shape](db, args);
  return { json: row.json, total: Number(row.total) };
}

/** The event listeners' lookups (`OrderEventBus.lookups`) for the statement that writes an event. */
export type EventLookups = readonly (Expression<unknown> | undefined)[];

/** What each lookup read, in the same order (null: that listener has none). */
export type LookedRows = (unknown[] | null)[];

/** `lookups` as one JSON column: an array of each lookup's rows, or null where a listener has none. */
function lookedColumn(lookups: EventLookups): RawBuilder<LookedRows> {
  if (lookups.length === 0) return sql<LookedRows>`'[]'::json`;
  const parts = lookups.map((l) => (l ? sql`(SELECT coalesce(json_agg(x), '[]'::json) FROM (${l}) AS x)` : sql`NULL::json`));
  return sql<LookedRows>`json_build_array(${sql.join(parts)})`;
}

export interface NewOrder {
  userId: number;
  shippingAddress: string;
  /** the lines, with the product names as they are now (processing writes them again with the prices) */
  lines: readonly { productId: number; productName: string; quantity: number }[];
  /** where the order came from: 'api' (default) or an inbound platform */
  source?: string;
  /** the platform's own order id, unique per source */
  externalId?: string | null;
}

/**
 * The products an order must find active, checked in the statement that inserts it: `states` reads
 * the distinct products of its lines (a query of the products module's, built from the statement's
 * database), `count` of them.
 */
export interface ProductCheck {
  states: SqlPart<ProductState, Kysely<Database>>;
  count: number;
}

/** A placed order, its `order.created` event, and what the event listeners' lookups read. */
export interface InsertedOrder {
  order: OrderRow;
  event: OrderEventRow;
  looked: LookedRows;
}

/**
 * Data-modifying statements of another module that run inside the order's insert (the processing
 * job, its link and its NOTIFY, see `JobQueue.linkedJob`), as CTEs built from `orders`, which yields
 * the new order's id as `id`, or no row when nothing was inserted. The last CTE is `alongside`, which
 * the insert reads: PostgreSQL runs a SELECT in WITH only then.
 */
export type AlongsideInsert = SqlPart<unknown, Expression<{ id: number }>>;

/**
 * The event listeners of `bus`, read by a statement that writes an event (the order's insert, for its
 * `order.created`; a status change, see `OrderChange`): with `lookups`, each listener's lookup,
 * returned as `looked`; with `quiet`, `OrderEventBus.quietWhen` as the statement's condition (the
 * insert's `held`), which needs a bus that tells (`tellsQuiet`).
 */
export interface InsertListeners {
  bus: OrderEventBus;
  read: 'lookups' | 'quiet';
}

/**
 * What a statement that writes an event reads of its `listeners`: their `quiet` condition
 * (`OrderEventBus.quietWhen`) or their `lookups`, whichever `read` asks for.
 */
function listenerReads(
  db: Kysely<Database>,
  listeners: InsertListeners | undefined,
  preview: OrderEventPreview,
): { quiet: Expression<boolean> | undefined; lookups: EventLookups } {
  if (listeners?.read !== 'quiet') return { quiet: undefined, lookups: listeners?.bus.lookups(db, preview) ?? [] };
  const quiet = listeners.bus.quietWhen(db, preview);
  if (quiet === undefined) throw new Error('quiet listeners need a bus that tells (tellsQuiet)');
  return { quiet, lookups: [] };
}

/** An `alongside` when there is nothing to run: no row. */
const NOTHING_ALONGSIDE = sql<Record<string, never>>`SELECT WHERE false`;

/** No products: the unchecked insert's stand-in for `ProductCheck.states`. */
const NO_PRODUCTS = sql<ProductState>`SELECT NULL::integer AS id, NULL::text AS name, NULL::boolean AS is_active WHERE false`;

type InsertedRow = (OrderRow | { [K in keyof OrderRow]: null }) & {
  event_id: number;
  event_created_at: Date;
  looked: LookedRows;
  held: boolean;
  alongside_rows: number;
  products: ProductState[];
};

/** `insertOrderStatement`, compiled once per shape. */
const orderInsert = compileByShape();

/**
 * Inserts a pending order (total 0), its lines (unit price 0) and its `order.created` event (sequence
 * 1: the order is new) in one statement: one round trip where the order, its lines and its event
 * took three. The lines get their ids in the order given. The event `listeners` are read in the
 * same statement, and `alongside` runs in it. With `check`, nothing is inserted unless every
 * product is active, the lines take the products' names, and the products read are returned either
 * way. With quiet `listeners`, nothing is inserted unless no listener acts, in the statement's
 * snapshot; `held` says whether that held (true otherwise). Compiled once per shape: every value is
 * a parameter.
 */
async function insertOrderStatement(
  db: Db,
  input: Omit<NewOrder, 'lines'> & { lines: readonly { productId: number; productName: string | null; quantity: number }[] },
  listeners: InsertListeners | undefined,
  check: ProductCheck | undefined,
  alongside: AlongsideInsert | undefined,
): Promise<{ inserted: InsertedOrder | undefined; products: ProductState[]; held: boolean }> {
  const args: Record<string, unknown> = {
    userId: input.userId,
    shippingAddress: input.shippingAddress,
    source: input.source ?? 'api',
    externalId: input.externalId ?? null,
    productIds: input.lines.map((l) => l.productId),
    productNames: input.lines.map((l) => l.productName),
    quantities: input.lines.map((l) => l.quantity),
  };
  if (check !== undefined) {
    args.checkCount = check.count;
    addPartArgs(args, 'check', check.states);
  }
  if (alongside !== undefined) addPartArgs(args, 'alongside', alongside);
  const key = [listeners === undefined ? '' : `${listeners.read} ${listeners.bus.shapeKey}`, check?.states.key ?? '', alongside?.key ?? ''].join('|');
  const [row] = await orderInsert(db, key, args, (db, a) => {
    const preview = { type: 'order.created', status: 'pending', userId: a.userId as number } as const;
    const { quiet, lookups } = listenerReads(db, listeners, preview);
    const condition = quiet ?? sql<boolean>`true`;
    const states = check === undefined ? NO_PRODUCTS : buildPart(check.states, 'check', a, db);
    return sql<InsertedRow>`
    WITH held AS MATERIALIZED (SELECT ${condition} AS held),
    p AS MATERIALIZED (${states}),
    o AS (
      INSERT INTO orders (user_id, status, total_amount, shipping_address, failure_reason, source, external_id)
      SELECT ${a.userId}, 'pending', 0, ${a.shippingAddress}, NULL, ${a.source}, ${a.externalId}
      WHERE ${check ? sql`(SELECT count(*) FROM p WHERE p.is_active) = ${a.checkCount}` : sql`true`} AND (SELECT held FROM held)
      RETURNING *
    ), lines AS (
      INSERT INTO order_items (order_id, product_id, product_name, quantity, unit_price)
      SELECT o.id, l.product_id, coalesce(p.name, l.product_name), l.quantity, 0
      FROM o CROSS JOIN unnest(${a.productIds}::integer[], ${a.productNames}::text[], ${a.quantities}::integer[])
                         WITH ORDINALITY AS l(product_id, product_name, quantity, n)
      LEFT JOIN p ON p.id = l.product_id
      ORDER BY l.n
    ), event AS (
      INSERT INTO order_events (order_id, user_id, type, previous_status, status, total_amount, sequence)
      SELECT o.id, o.user_id, 'order.created', NULL, o.status, o.total_amount, 1 FROM o
      RETURNING id AS event_id, created_at AS event_created_at
    ), ${alongside ? buildPart(alongside, 'alongside', a, sql<{ id: number }>`(SELECT id FROM o)`) : sql`alongside AS (${NOTHING_ALONGSIDE})`}
    SELECT o.*, event.event_id, event.event_created_at, ${lookedColumn(lookups)} AS looked, (SELECT held FROM held) AS held,
           (SELECT count(*)::int FROM alongside) AS alongside_rows,
           (SELECT coalesce(json_agg(p), '[]'::json) FROM p) AS products
    FROM (SELECT 1) AS one LEFT JOIN (o CROSS JOIN event) ON true
  `;
  });
  const { event_id, event_created_at, looked, held, alongside_rows: _read, products, ...order } = row;
  if (order.id === null) return { inserted: undefined, products, held };
  return {
    products,
    held,
    inserted: {
      looked,
      order,
      event: {
        id: event_id,
        order_id: order.id,
        user_id: order.user_id,
        type: 'order.created',
        previous_status: null,
        status: order.status,
        total_amount: order.total_amount,
        sequence: 1,
        reason: null,
        details: null,
        created_at: event_created_at,
      },
    },
  };
}

/** `insertOrderStatement` without a product check: the caller checked the lines' products. */
export async function insertOrderWithEvent(
  trx: Transaction<Database>,
  input: NewOrder,
  listeners?: InsertListeners,
  alongside?: AlongsideInsert,
): Promise<InsertedOrder> {
  const { inserted } = await insertOrderStatement(trx, input, listeners, undefined, alongside);
  if (!inserted) throw new Error('the order was not inserted');
  return inserted;
}

/**
 * `insertOrderStatement` with its product check (one round trip where the check and the insert took
 * two): `inserted` is undefined when a product is unknown or inactive, or quiet `listeners` would
 * act (`held` false); `products` are those found.
 */
export async function insertCheckedOrderWithEvent(
  db: Db,
  input: Omit<NewOrder, 'lines'> & { lines: readonly { productId: number; quantity: number }[] },
  listeners: InsertListeners | undefined,
  check: ProductCheck,
  alongside?: AlongsideInsert,
): Promise<{ inserted: InsertedOrder | undefined; products: ProductState[]; held: boolean }> {
  return insertOrderStatement(db, { ...input, lines: input.lines.map((l) => ({ ...l, productName: null })) }, listeners, check, alongside);
}

/** The change of one order's status (and of the fields that go with it) and the event it writes. */
export interface OrderChange {
  patch: Updateable<OrdersTable> & { status: OrderStatus };
  event: { type: OrderEventType; previousStatus: OrderStatus | null; reason: string | null; details: unknown };
  /** each product's price and name, written into the order's lines of that product in the same statement */
  linePrices?: readonly LinePrice[];
  /**
   * The event listeners of `bus`, read in the same statement for the event it writes, whose owner is
   * `owner` (or, with `'order'`, read from the order): with `lookups`, each listener's lookup, its
   * rows returned as `looked`; with `quiet`, `OrderEventBus.quietWhen` as the change's condition, so
   * nothing is written (not the lines' prices, nor `alongside`) when a listener would act. `quiet`
   * needs a bus that tells (`tellsQuiet`).
   */
  listeners?: InsertListeners & { owner: number | 'order' };
  /**
   * a data-modifying statement of another module run as part of this one (the products module's
   * change of the order's stock), so it commits with the change and costs no round trip of its own.
   * Built from `changed`, SQL that is true only when the order's row changed: its writes must require it.
   */
  alongside?: SqlPart<Record<string, unknown>, Expression<boolean>>;
  /**
   * Changes the order only when its status is this one, without a lock taken first: see
   * `updateOrderWithEvent`.
   */
  onlyFrom?: OrderStatus;
  /** The statement is its transaction's last, and the transaction's COMMIT rides with it (`THEN_COMMIT`). */
  commits?: boolean;
}

/** A product's price (exact decimal text) and name, as the processing copies them into an order's lines. */
export interface LinePrice {
  id: number;
  price: string;
  name: string;
}

/** Products as rows (id, price, name) from their columns' arrays, for an UPDATE's FROM. */
function linePriceRows(ids: unknown, prices: unknown, names: unknown): RawBuilder<LinePrice> {
  return sql<LinePrice>`(SELECT * FROM unnest(${ids}::integer[], ${prices}::numeric[], ${names}::text[]) AS u (id, price, name))`;
}

type UpdatedOrderRow = OrderRow & { event_id: number; event_sequence: number; event_details: unknown; event_created_at: Date; looked: LookedRows };

/** `updateOrderWithEvent`'s statement, compiled once per shape. */
const orderUpdate = compileByShape();

/**
 * Updates the order and writes its next numbered event (`sequence` 1, 2, 3 …), from the row as
 * updated, in one statement: one round trip where the update and the insert took two. The sequence
 * is read from the statement's snapshot, which holds every earlier event of the order; the caller
 * holds the order row's lock, so it cannot race. With `linePrices`, the order's lines are priced in
 * the same statement too, the event listeners' `lookups` are read in it, and `alongside` runs in it.
 *
 * With `onlyFrom`, the caller holds no lock: the UPDATE takes it, and when it had to wait for
 * another transaction's, PostgreSQL re-checks the condition on the row as that one left it, so
 * only an order still in `onlyFrom` changes (undefined otherwise, and nothing is written). The
 * sequence is still the snapshot's: should changes commit while the statement waits and bring the
 * order back to `onlyFrom` (failed, then retried), it repeats, and the unique (order_id, sequence)
 * refuses the statement rather than number two events alike.
 */
export async function updateOrderWithEvent(
  db: Db,
  id: number,
  change: OrderChange & { onlyFrom?: undefined },
): Promise<{ order: OrderRow; event: OrderEventRow; looked: LookedRows }>;
export async function updateOrderWithEvent(
  db: Db,
  id: number,
  change: OrderChange,
): Promise<{ order: OrderRow; event: OrderEventRow; looked: LookedRows } | undefined>;
export async function updateOrderWithEvent(
  db: Db,
  id: number,
  change: OrderChange,
): Promise<{ order: OrderRow; event: OrderEventRow; looked: LookedRows } | undefined> {
  const { event, patch, listeners, alongside } = change;
  const details = event.details === undefined || event.details === null ? null : JSON.stringify(event.details);
  const prices = change.linePrices ?? [];
  // every value is a parameter; the key names what the statement's text depends on
  const columns = (Object.keys(patch) as (keyof typeof patch & string)[]).filter((c) => patch[c] !== undefined).sort();
  const args: Record<string, unknown> = {
    id,
    type: event.type,
    previousStatus: event.previousStatus,
    reason: event.reason,
    details,
    priceIds: prices.map((p) => p.id),
    prices: prices.map((p) => p.price),
    names: prices.map((p) => p.name),
  };
  for (const c of columns) args[`set_${c}`] = patch[c];
  if (change.onlyFrom !== undefined) args.onlyFrom = change.onlyFrom;
  if (listeners !== undefined && listeners.owner !== 'order') args.owner = listeners.owner;
  if (alongside !== undefined) addPartArgs(args, 'alongside', alongside);
  const key = [
    columns.join(','),
    change.onlyFrom === undefined ? '' : 'from',
    listeners === undefined ? '' : `${listeners.read} ${listeners.bus.shapeKey} ${listeners.owner === 'order' ? 'order' : 'owner'} ${event.type} ${patch.status}`,
    alongside?.key ?? '',
    change.commits ? 'commit' : '',
  ].join('|');
  const [row] = await orderUpdate(db, key, args, (db, a) => {
    const orderId = a.id as number;
    // the listeners' preview: its owner is asked for only by a lookup that reads it
    const preview = {
      type: event.type,
      status: patch.status,
      get userId() {
        return listeners?.owner === 'order' ? ownerOf(orderId) : (a.owner as number);
      },
    };
    const { quiet, lookups } = listenerReads(db, listeners, preview);
    const set = Object.fromEntries(columns.map((c) => [c, a[`set_${c}`]])) as Updateable<OrdersTable>;
    // the lines' prices and `alongside` are written only with the order's change, which the listeners' condition may refuse
    const changed = sql<boolean>`EXISTS (SELECT FROM updated)`;
    const statement = db
      .with('updated', (db) => {
        const update = db.updateTable('orders').set(set).where('id', '=', orderId);
        const from = change.onlyFrom === undefined ? update : update.where('status', '=', a.onlyFrom as OrderStatus);
        return (quiet === undefined ? from : from.where(quiet)).returningAll();
      })
      // PostgreSQL runs a data-modifying WITH to completion whether or not the query reads it
      .with('alongside', () => sql<Record<string, unknown>>`(${alongside ? buildPart(alongside, 'alongside', a, changed) : NOTHING_ALONGSIDE})`)
      // without prices, an UPDATE of no lines: one statement shape for every change
      .with('priced', (db) =>
        db
          .updateTable('order_items as oi')
          .from(linePriceRows(a.priceIds, a.prices, a.names).as('p'))
          .set((eb) => ({ unit_price: eb.ref('p.price'), product_name: eb.ref('p.name') }))
          .where('oi.order_id', '=', orderId)
          .whereRef('oi.product_id', '=', 'p.id')
          .where(changed),
      )
      .with('event', (db) =>
        db
          .insertInto('order_events')
          .columns(['order_id', 'user_id', 'type', 'previous_status', 'status', 'total_amount', 'reason', 'details', 'sequence'])
          .expression((eb) =>
            eb
              .selectFrom('updated')
              .select([
                'updated.id',
                'updated.user_id',
                sql<string>`${a.type}::text`.as('type'),
                sql<OrderStatus | null>`${a.previousStatus}::text`.as('previous_status'),
                'updated.status',
                'updated.total_amount',
                sql<string | null>`${a.reason}::text`.as('reason'),
                sql<string | null>`${a.details}::jsonb`.as('details'),
                nextEventSequence(orderId).as('sequence'),
              ]),
          )
          .returning(['id as event_id', 'sequence as event_sequence', 'details as event_details', 'created_at as event_created_at']),
      )
      .selectFrom(['updated', 'event'])
      .selectAll('updated')
      .select(['event.event_id', 'event.event_sequence', 'event.event_details', 'event.event_created_at'])
      .select(lookedColumn(lookups).as('looked'));
    return (change.commits ? statement.modifyEnd(sql.raw(THEN_COMMIT)) : statement) as unknown as Compilable<UpdatedOrderRow>;
  });
  if (row === undefined) {
    if (change.onlyFrom !== undefined) return undefined;
    throw new Error(`order ${id}: no such order to change`);
  }
  const { event_id, event_sequence, event_details, event_created_at, looked, ...order } = row;
  return {
    looked,
    order: order as OrderRow,
    event: {
      id: event_id,
      order_id: order.id,
      user_id: order.user_id,
      type: event.type,
      previous_status: event.previousStatus,
      status: order.status,
      total_amount: order.total_amount,
      sequence: event_sequence,
      reason: event.reason,
      details: event_details,
      created_at: event_created_at,
    } as OrderEventRow,
  };
}

/**
 * How long a statement that changes several orders at once waits for a lock before it gives up
 * (`lock_timeout`, for its transaction only). Such a statement takes the rows of several orders and
 * of the counters their triggers keep, in an order that a change of one order does not follow, so
 * the two could deadlock; with this bound it is always the batch that gives up, long before
 * PostgreSQL's deadlock check (`deadlock_timeout`, 1 s by default) would pick a victim, and its
 * caller then changes each order on its own. Every lock such a statement needs is held by other
 * transactions for a few milliseconds at most, so the bound costs nothing otherwise.
 */
const BATCH_LOCK_TIMEOUT = '100ms';

/** SQL that sets `lock_timeout` for the rest of the transaction (the implicit one of a statement sent alone). */
const batchLockTimeout = sql<string>`set_config('lock_timeout', ${sql.lit(BATCH_LOCK_TIMEOUT)}, true)`;

/** `moveToProcessingQuietly`'s statement, compiled once per event bus shape. */
const ordersMove = compileByShape();

/**
 * Moves each order of `ids` that is `pending` to `processing` and writes its event, in one statement
 * outside any transaction: the set-wise `startProcessingQuietly` of a batch of order jobs. An order
 * moves only when no listener of `bus` acts on its move (`quietWhen`, for its own owner, read in the
 * statement's snapshot); it commits with the others, with nothing to publish. Returns the ids of the
 * orders moved; the others (not pending, or a listener acts) are left as they were. Needs a bus that
 * tells (`tellsQuiet`) for the move.
 */
export async function moveToProcessingQuietly(db: Db, bus: OrderEventBus, ids: readonly number[], now: Date): Promise<number[]> {
  const rows = await ordersMove(db, bus.shapeKey, { ids: [...ids], now }, (db, a) => {
    const quiet = bus.quietWhen(db, { type: 'order.status_changed', status: 'processing', userId: sql.ref<number>('o.user_id') });
    if (quiet === undefined) throw new Error('moving orders quietly needs a bus that tells (tellsQuiet)');
    return sql<{ id: number }>`
      WITH settings AS MATERIALIZED (SELECT ${batchLockTimeout}),
      updated AS (
        UPDATE orders AS o SET status = 'processing', updated_at = ${a.now}
        WHERE o.id = ANY(${a.ids}::integer[]) AND o.status = 'pending' AND EXISTS (SELECT FROM settings) AND ${quiet}
        RETURNING o.id, o.user_id, o.status, o.total_amount
      ), event AS (
        INSERT INTO order_events (order_id, user_id, type, previous_status, status, total_amount, sequence)
        SELECT u.id, u.user_id, 'order.status_changed', 'pending', u.status, u.total_amount,
               ${nextEventSequence(sql.ref('u.id'))}
        FROM updated u
      )
      SELECT id FROM updated`;
  });
  return rows.map((r) => r.id);
}

/** An order locked by `lockOrdersWithProducts`: its status under the lock, and what it wants of each product. */
export interface LockedOrder {
  id: number;
  status: OrderStatus;
  demand: ProductDemand[];
}

/** `lockOrdersWithProducts`'s statement, compiled once. */
const ordersLock = compileByShape();

/**
 * `lockOrderWithProducts` for several orders in one round trip: the order rows of `ids`, locked in id
 * order until `trx` ends, each with its status and demand, and the products of those in `status`,
 * locked by `lockProducts` (always the products module's `lockProductsQuery`: the statement is
 * compiled once) after every order's lock. Orders that do not exist are left out. Sets the
 * transaction's `lock_timeout` (see BATCH_LOCK_TIMEOUT) before it takes a lock.
 */
export async function lockOrdersWithProducts<P>(
  trx: Transaction<Database>,
  ids: readonly number[],
  status: OrderStatus,
  lockProducts: (ids: RawBuilder<unknown>, when: RawBuilder<boolean>) => RawBuilder<P>,
): Promise<{ orders: LockedOrder[]; products: P[] }> {
  const [row] = await ordersLock(trx, 'products', { ids: [...ids], status }, (_db, a) => {
    const ready = sql`SELECT id FROM o WHERE status = ${a.status}`;
    const products = lockProducts(sql`SELECT product_id FROM order_items WHERE order_id IN (${ready})`, sql<boolean>`EXISTS (${ready})`);
    return sql<{ orders: LockedOrder[] | null; products: P[] | null }>`
      WITH settings AS MATERIALIZED (SELECT ${batchLockTimeout}),
      o AS MATERIALIZED (SELECT id, status FROM orders WHERE id = ANY(${a.ids}::integer[]) AND EXISTS (SELECT FROM settings) ORDER BY id FOR UPDATE),
      p AS MATERIALIZED (${products})
      SELECT
        (SELECT json_agg(json_build_object(
           'id', o.id, 'status', o.status,
           'demand', coalesce((SELECT json_agg(d ORDER BY d."productId") FROM (${demandRows(sql.ref('o.id'))}) d), '[]'::json)
         ) ORDER BY o.id) FROM o) AS orders,
        (SELECT json_agg(p) FROM p) AS products`;
  });
  return { orders: row?.orders ?? [], products: row?.products ?? [] };
}

/** What the processing of one order decided, for `finishOrdersQuietly`. */
export interface OrderOutcome {
  id: number;
  status: 'completed' | 'failed';
  /** the order's total (completed) */
  total: string | null;
  /** the failure reason (failed); null clears it (completed) */
  reason: string | null;
  /** the failure's details, as JSON text (failed, when there are some) */
  details: string | null;
}

/** `finishOrdersQuietly`'s statement, compiled once per event bus shape. */
const ordersFinish = compileByShape();

/**
 * Writes the outcomes of several orders, locked in `processing` by `lockOrdersWithProducts` in `trx`,
 * in one statement, the last of `trx`, whose COMMIT rides with it (`THEN_COMMIT`): each order's
 * status, total or failure reason and its event, the completed orders' lines priced (`linePrices`:
 * every product's price and name) and `stock` (the products module's change of the stock the
 * completed orders take, summed per product; made only when every order changed). All of it only
 * when no listener of `bus` acts on any of the outcomes (`quietWhen` for each order's owner, for
 * both a completion and a failure): returns false, with nothing written, otherwise. Needs a bus
 * that tells (`tellsQuiet`) for both.
 */
export async function finishOrdersQuietly(
  trx: Transaction<Database>,
  bus: OrderEventBus,
  outcomes: readonly OrderOutcome[],
  linePrices: readonly LinePrice[],
  stock: SqlPart<Record<string, unknown>, Expression<boolean>>,
  now: Date,
): Promise<boolean> {
  const args: Record<string, unknown> = {
    ids: outcomes.map((o) => o.id),
    statuses: outcomes.map((o) => o.status),
    totals: outcomes.map((o) => o.total),
    reasons: outcomes.map((o) => o.reason),
    details: outcomes.map((o) => o.details),
    priceIds: linePrices.map((p) => p.id),
    prices: linePrices.map((p) => p.price),
    names: linePrices.map((p) => p.name),
    now,
  };
  addPartArgs(args, 'stock', stock);
  const [row] = await ordersFinish(trx, `${bus.shapeKey} ${stock.key}`, args, (db, a) => {
    const owner = sql.ref<number>('owners.user_id');
    const quiet = (['completed', 'failed'] as const).map((status) => bus.quietWhen(db, { type: 'order.status_changed', status, userId: owner }));
    if (quiet.some((q) => q === undefined)) throw new Error('finishing orders quietly needs a bus that tells (tellsQuiet)');
    const held = sql<boolean>`(SELECT held FROM held)`;
    return sql<{ held: boolean }>`
      WITH v AS MATERIALIZED (
        SELECT * FROM unnest(${a.ids}::integer[], ${a.statuses}::text[], ${a.totals}::numeric[], ${a.reasons}::text[], ${a.details}::text[])
          AS v (id, status, total, reason, details)
      ),
      held AS MATERIALIZED (
        SELECT NOT EXISTS (SELECT FROM orders AS owners WHERE owners.id IN (SELECT id FROM v) AND NOT (${sql.join(quiet as Expression<boolean>[], sql` AND `)})) AS held
      ),
      updated AS (
        UPDATE orders AS o SET status = v.status, updated_at = ${a.now}, total_amount = coalesce(v.total, o.total_amount), failure_reason = v.reason
        FROM v WHERE o.id = v.id AND o.status = 'processing' AND ${held}
        RETURNING o.id, o.user_id, o.status, o.total_amount
      ),
      priced AS (
        UPDATE order_items AS oi SET unit_price = p.price, product_name = p.name
        FROM ${linePriceRows(a.priceIds, a.prices, a.names)} AS p
        WHERE oi.order_id IN (SELECT id FROM updated WHERE status = 'completed') AND oi.product_id = p.id
      ),
      alongside AS (${buildPart(stock, 'stock', a, sql<boolean>`(SELECT count(*) FROM updated) = cardinality(${a.ids}::integer[])`)}),
      event AS (
        INSERT INTO order_events (order_id, user_id, type, previous_status, status, total_amount, reason, details, sequence)
        SELECT u.id, u.user_id, 'order.status_changed', 'processing', u.status, u.total_amount, v.reason, v.details::jsonb,
               ${nextEventSequence(sql.ref('u.id'))}
        FROM updated u JOIN v ON v.id = u.id
      )
      SELECT ${held} AS held${sql.raw(THEN_COMMIT)}`;
  });
  return row?.held === true;
}

/** The units an order wants of each product (lines of the same product summed), in product id order. */
export async function orderDemand(trx: Transaction<Database>, orderId: number): Promise<ProductDemand[]> {
  const { rows } = await sql<ProductDemand>`${demandRows(orderId)} ORDER BY product_id`.execute(trx);
  return rows;
}

/** The id of the order a platform knows by `externalId`, if it exists. */
export async function findOrderIdByExternalId(db: Db, source: string, externalId: string): Promise<number | undefined> {
  const row = await db.selectFrom('orders').select('id').where('source', '=', source).where('external_id', '=', externalId).executeTakeFirst();
  return row?.id;
}

export interface IdempotentResponse {
  request_hash: string;
  response_status: number;
  response_body: unknown;
}

export async function findIdempotencyKey(db: Db, userId: number, key: string): Promise<IdempotentResponse | undefined> {
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

export async function purgeExpiredIdempotencyKeys(db: Db): Promise<number> {
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
