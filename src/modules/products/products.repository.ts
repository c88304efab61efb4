import { sql, type Insertable, type Kysely, type Updateable } from 'kysely';
import type { Database, ProductRow, ProductsTable } from '../../db/schema.ts';

type Executor = Kysely<Database>;

export async function findProductById(db: Executor, id: number): Promise<ProductRow | undefined> {
  return db.selectFrom('products').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findProductBySku(db: Executor, sku: string): Promise<ProductRow | undefined> {
  return db.selectFrom('products').selectAll().where('sku', '=', sku).executeTakeFirst();
}

/** id, is_active of the given products (one query); unknown ids are simply absent. */
export async function findProductStates(db: Executor, ids: number[]): Promise<{ id: number; is_active: boolean }[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('products').select(['id', 'is_active']).where('id', 'in', ids).execute();
}

export async function insertProduct(db: Executor, product: Insertable<ProductsTable>): Promise<ProductRow> {
  return db.insertInto('products').values(product).returningAll().executeTakeFirstOrThrow();
}

export async function updateProduct(db: Executor, id: number, patch: Updateable<ProductsTable>): Promise<ProductRow | undefined> {
  return db.updateTable('products').set(patch).where('id', '=', id).returningAll().executeTakeFirst();
}

export async function listProducts(
  db: Executor,
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
  db: Executor,
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
