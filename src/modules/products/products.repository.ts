import { sql, type Insertable, type Transaction, type Updateable } from 'kysely';
import type { Database, ProductRow, ProductsTable } from '../../db/schema.ts';
import type { Db } from '../../db/database.ts';

export async function findProductById(db: Db, id: number): Promise<ProductRow | undefined> {
  return db.selectFrom('products').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findProductBySku(db: Db, sku: string): Promise<ProductRow | undefined> {
  return db.selectFrom('products').selectAll().where('sku', '=', sku).executeTakeFirst();
}

/** What an order's placement checks of a product: whether it is active, and its name for the lines. */
export interface ProductState {
  id: number;
  name: string;
  is_active: boolean;
}

/**
 * id, name, is_active of the given products, as a query not yet run: `findProductStates` runs it,
 * and an order's insert embeds it to check the order's products in its own statement. Unknown ids
 * are simply absent.
 */
export function productStatesQuery(db: Db, ids: readonly number[]) {
  return db.selectFrom('products').select(['id', 'name', 'is_active']).where(sql<boolean>`id = ANY(${[...ids]}::integer[])`);
}

export async function findProductStates(db: Db, ids: number[]): Promise<ProductState[]> {
  if (ids.length === 0) return [];
  return productStatesQuery(db, ids).execute();
}

export async function findProductsBySku(db: Db, skus: string[]): Promise<ProductRow[]> {
  if (skus.length === 0) return [];
  return db.selectFrom('products').selectAll().where('sku', 'in', skus).execute();
}

/** The SKU of each of the given products. */
export async function findSkus(db: Db, ids: number[]): Promise<Map<number, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('products').select(['id', 'sku']).where('id', 'in', ids).execute();
  return new Map(rows.map((r) => [r.id, r.sku]));
}

/** A product as an order's processing sees it: locked, with its price as exact decimal text. */
export interface LockedProduct {
  id: number;
  name: string;
  stock: number;
  is_active: boolean;
  /** numeric(12,2) as exact decimal text */
  price: string;
}

/**
 * Locks the given products, in id order, until `trx` ends, and returns them (unknown ids are
 * absent). The id order means concurrent orders always take their locks in the same order. FOR NO
 * KEY UPDATE (the lock an UPDATE of stock takes anyway), not FOR UPDATE: it does not conflict with
 * the KEY SHARE locks that inserting order lines takes on their products through the foreign key,
 * so creating an order never waits for (or deadlocks with) the processing of another one.
 */
export async function lockProducts(trx: Transaction<Database>, ids: number[]): Promise<LockedProduct[]> {
  if (ids.length === 0) return [];
  const { rows } = await sql<LockedProduct>`
    SELECT id, name, stock, is_active, price::text AS price
    FROM products WHERE id = ANY(${ids}::integer[])
    ORDER BY id
    FOR NO KEY UPDATE
  `.execute(trx);
  return rows;
}

/**
 * Locks the products of `demand` as `lockProducts` does (in id order) and, in the same statement,
 * takes the units when every one is known and active, has them in stock, and the order's total at
 * their prices is at most `maxTotal`; otherwise takes nothing. One round trip where the lock and
 * the take were two. Returns the products as locked (the stock before the take), for the caller's
 * checks and prices, and whether the units were taken. Each product appears once in `demand`.
 *
 * The lock is taken by the materialised `locked` CTE, which `ok` reads whole before the UPDATE
 * evaluates its condition: every row is locked, at its newest version, before any is changed.
 */
export async function lockAndTakeStock(
  trx: Transaction<Database>,
  demand: readonly { productId: number; quantity: number }[],
  maxTotal: number,
): Promise<{ products: LockedProduct[]; taken: boolean }> {
  if (demand.length === 0) return { products: [], taken: false };
  const ids = demand.map((d) => d.productId);
  const { rows } = await sql<LockedProduct & { taken: boolean }>`
    WITH d AS (SELECT * FROM unnest(${ids}::integer[], ${demand.map((d) => d.quantity)}::integer[]) AS d (id, quantity)),
    locked AS MATERIALIZED (
      SELECT id, name, stock, is_active, price FROM products WHERE id = ANY(${ids}::integer[]) ORDER BY id FOR NO KEY UPDATE
    ),
    ok AS (
      SELECT count(*) = ${demand.length}::integer AND bool_and(l.is_active AND l.stock >= d.quantity)
             AND sum(l.price * d.quantity) <= ${maxTotal}::numeric AS ok
      FROM d JOIN locked l ON l.id = d.id
    ),
    taken AS (
      UPDATE products AS p SET stock = p.stock - d.quantity, updated_at = now()
      FROM d WHERE p.id = d.id AND (SELECT ok FROM ok)
      RETURNING p.id
    )
    SELECT l.id, l.name, l.stock, l.is_active, l.price::text AS price, EXISTS (SELECT 1 FROM taken) AS taken
    FROM locked l ORDER BY l.id
  `.execute(trx);
  return { products: rows.map(({ taken: _, ...p }) => p), taken: rows.length > 0 && rows[0].taken };
}

/**
 * Puts units back into stock (a cancelled order's lines), on products the caller has locked
 * (`lockProducts`), so the release and the status change that causes it commit together.
 */
export async function returnStock(trx: Transaction<Database>, demand: readonly { productId: number; quantity: number }[]): Promise<void> {
  if (demand.length === 0) return;
  await sql`
    UPDATE products AS p SET stock = p.stock + d.quantity, updated_at = now()
    FROM unnest(${demand.map((d) => d.productId)}::integer[], ${demand.map((d) => d.quantity)}::integer[]) AS d (id, quantity)
    WHERE p.id = d.id
  `.execute(trx);
}

export async function insertProduct(db: Db, product: Insertable<ProductsTable>): Promise<ProductRow> {
  return db.insertInto('products').values(product).returningAll().executeTakeFirstOrThrow();
}

export async function updateProduct(db: Db, id: number, patch: Updateable<ProductsTable>): Promise<ProductRow | undefined> {
  return db.updateTable('products').set(patch).where('id', '=', id).returningAll().executeTakeFirst();
}

export async function listProducts(
  db: Db,
  opts: { limit: number; offset: number; isActive: boolean | undefined },
): Promise<{ rows: ProductRow[]; total: number }> {
  let base = db.selectFrom('products');
  if (opts.isActive !== undefined) base = base.where('is_active', '=', opts.isActive);
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('id', 'asc').limit(opts.limit).offset(opts.offset).execute(),
    base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.total) };
}

/**
 * Inserts the given products only when the catalogue is empty, in one statement: concurrent starts
 * cannot duplicate it (the sku key makes a racing insert a no-op) and a non-empty catalogue is never
 * touched. Returns the number of rows inserted.
 */
export async function seedProductsIfEmpty(
  db: Db,
  products: readonly { sku: string; name: string; price: string; stock: number }[],
): Promise<number> {
  if (products.length === 0) return 0;
  const values = sql.join(products.map((p) => sql`(${p.sku}, ${p.name}, ${p.price}::numeric, ${p.stock}::integer)`));
  const result = await sql`
    INSERT INTO products (sku, name, price, stock)
    SELECT v.sku, v.name, v.price, v.stock FROM (VALUES ${values}) AS v (sku, name, price, stock)
    WHERE NOT EXISTS (SELECT 1 FROM products)
    ON CONFLICT (sku) DO NOTHING
  `.execute(db);
  return Number(result.numAffectedRows ?? 0);
}
