import type { Db } from '../../db/database.ts';
import type { UserRow } from '../../db/schema.ts';
import type { ProductRow } from './products.tables.ts';
import { AppError } from '../../http/errors.ts';
import { pageOf, type PageResult } from '../../http/common.schemas.ts';
import { moneyToDecimal } from './money.ts';
import { findProductById, findProductBySku, insertProduct, listProducts, updateProduct } from './products.repository.ts';
import type { ProductCreateBody, ProductListQuery, ProductUpdateBody } from './products.schemas.ts';
import { isUniqueViolation } from '../../db/errors.ts';

const productNotFound = () => new AppError('NOT_FOUND', 'Product not found');
const skuExists = () => new AppError('SKU_EXISTS', 'SKU already exists');
/** A write that broke the SKU's uniqueness (a concurrent writer took it after the check) is SKU_EXISTS too. */
const uniqueSku = (err: unknown): never => {
  throw isUniqueViolation(err) ? skuExists() : err;
};

/** Administrators see the whole catalogue (optionally filtered); everyone else only active products. */
export async function listProductsFor(db: Db, actor: UserRow, q: ProductListQuery): Promise<PageResult<ProductRow>> {
  const isActive = actor.is_admin ? q.is_active : true;
  if (!actor.is_admin && q.is_active === false) return pageOf([], 0, q.page, q.page_size);
  const { rows, total } = await listProducts(db, { limit: q.page_size, offset: (q.page - 1) * q.page_size, isActive });
  return pageOf(rows, total, q.page, q.page_size);
}

/** An inactive product is hidden (404) from everyone but administrators. */
export async function getProduct(db: Db, actor: UserRow, id: number): Promise<ProductRow> {
  const product = await findProductById(db, id);
  if (!product || (!product.is_active && !actor.is_admin)) throw productNotFound();
  return product;
}

export async function createProduct(db: Db, input: ProductCreateBody): Promise<ProductRow> {
  const { sku, name, stock, is_active = true } = input;
  const price = moneyToDecimal(input.price, 'price');
  if (await findProductBySku(db, sku)) throw skuExists();
  return insertProduct(db, { sku, name, price, stock, is_active }).catch(uniqueSku);
}

/** PATCH semantics: only the given fields change. */
export async function patchProduct(db: Db, id: number, input: ProductUpdateBody): Promise<ProductRow> {
  // an absent field is undefined, which Kysely leaves out of the SET
  const { sku, name, stock, is_active } = input;
  const price = input.price === undefined ? undefined : moneyToDecimal(input.price, 'price');
  if (sku !== undefined) {
    const other = await findProductBySku(db, sku);
    if (other && other.id !== id) throw skuExists();
  }
  const updated = await updateProduct(db, id, { sku, name, price, stock, is_active, updated_at: new Date() }).catch(uniqueSku);
  if (!updated) throw productNotFound();
  return updated;
}
