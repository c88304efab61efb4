import { sql, type Insertable, type Transaction, type Updateable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { ProductRow, ProductsTable } from './products.tables.ts';
import type { Db } from '../../db/database.ts';

export async function findProductById(db: Db, id: number): Promise<ProductRow | undefined> {
  return db.selectFrom('products').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findProductBySku(db: Db, sku: string): Promise<ProductRow | undefined> {
  return db.selectFrom('products').selectAll().where('sku', '=', sku).executeTakeFirst();
}

/** What an order's placement checks of a product: whether it is active, and its name for the lines. */
export type ProductState = Pick<ProductRow, 'id' | 'name' | 'is_active'>;

/** The given products' states as a query an order's insert can embed; unknown ids are absent. */
export function productStatesQuery(db: Db, ids: readonly number[]) {
  return db.selectFrom('products').select(['id', 'name', 'is_active']).where(sql<boolean>`id = ANY(${ids}::integer[])`);
}

export async function findProductStates(db: Db, ids: number[]): Promise<ProductState[]> {
  if (ids.length === 0) return [];
  return productStatesQuery(db, ids).execute();
}

export async function findProductsBySku(db: Db, skus: string[]): Promise<ProductRow[]> {
  if (skus.length === 0) return [];
  return db.selectFrom('products').selectAll().where('sku', 'in', skus).execute();
}

export async function findSkusAndNames(db: Db, ids: number[]): Promise<Map<number, { sku: string; name: string }>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('products').select(['id', 'sku', 'name']).where('id', 'in', ids).execute();
  return new Map(rows.map((r) => [r.id, r]));
}

/**
 * Locks the given products in id order (one order for every caller) until `trx` ends. FOR NO KEY UPDATE does not conflict
 * with the KEY SHARE locks order lines' foreign keys take, so creating an order never waits for another's processing.
 */
export async function lockProducts(trx: Transaction<Database>, ids: readonly number[]) {
  if (ids.length === 0) return [];
  return trx
    .selectFrom('products')
    .select(['id', 'name', 'stock', 'is_active', sql<string>`price::text`.as('price')])
    .where('id', 'in', [...ids])
    .orderBy('id')
    .forNoKeyUpdate()
    .execute();
}

/** A product as an order's processing sees it: locked, with its price as exact decimal text. */
export type LockedProduct = Awaited<ReturnType<typeof lockProducts>>[number];

/**
 * Changes the stock of products (`delta` units: negative takes them, positive puts them back) whose locks
 * the caller holds from an earlier statement: locking and changing in one statement deadlocks under
 * contention (its UPDATE's snapshot predates its locks).
 */
export async function changeStock(trx: Transaction<Database>, changes: readonly { productId: number; delta: number }[]): Promise<void> {
  if (changes.length === 0) return;
  await sql`
    UPDATE products AS p SET stock = p.stock + d.delta, updated_at = now()
    FROM unnest(${changes.map((c) => c.productId)}::integer[], ${changes.map((c) => c.delta)}::integer[]) AS d (id, delta)
    WHERE p.id = d.id`.execute(trx);
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

/** Inserts the products only into an empty catalogue, in one statement (concurrent starts cannot duplicate it). */
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
