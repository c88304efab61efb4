import type { Updateable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { ProductRow, ProductsTable, UserRow } from '../../db/schema.ts';
import { AppError } from '../../http/errors.ts';
import { pageOf, type PageResult } from '../../http/common.schemas.ts';
import { moneyToDecimal } from './money.ts';
import { findProductById, findProductBySku, insertProduct, listProducts, updateProduct } from './products.repository.ts';
import type { ProductCreateBody, ProductListQuery, ProductUpdateBody } from './products.schemas.ts';
import { isUniqueViolation } from '../../db/errors.ts';

const productNotFound = () => new AppError('NOT_FOUND', 'Product not found');
const skuExists = () => new AppError('SKU_EXISTS', 'SKU already exists');

export class ProductsService {
  private readonly db: Db;

  constructor(deps: { db: Db }) {
    this.db = deps.db;
  }

  /** Administrators see the whole catalogue (optionally filtered); everyone else only active products. */
  async list(actor: UserRow, q: ProductListQuery): Promise<PageResult<ProductRow>> {
    const isActive = actor.is_admin ? q.is_active : true;
    if (!actor.is_admin && q.is_active === false) return pageOf([], 0, q.page, q.page_size);
    const { rows, total } = await listProducts(this.db, { limit: q.page_size, offset: (q.page - 1) * q.page_size, isActive });
    return pageOf(rows, total, q.page, q.page_size);
  }

  /** An inactive product is hidden (404) from everyone but administrators. */
  async get(actor: UserRow, id: number): Promise<ProductRow> {
    const product = await findProductById(this.db, id);
    if (!product || (!product.is_active && !actor.is_admin)) throw productNotFound();
    return product;
  }

  async create(input: ProductCreateBody): Promise<ProductRow> {
    const price = moneyToDecimal(input.price, 'price');
    if (await findProductBySku(this.db, input.sku)) throw skuExists();
    try {
      return await insertProduct(this.db, {
        sku: input.sku,
        name: input.name,
        price,
        stock: input.stock,
        is_active: input.is_active ?? true,
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw skuExists();
      throw err;
    }
  }

  /** PATCH semantics: only the given fields change. */
  async update(id: number, input: ProductUpdateBody): Promise<ProductRow> {
    const patch: Updateable<ProductsTable> = { updated_at: new Date() };
    if (input.price !== undefined) patch.price = moneyToDecimal(input.price, 'price');
    if (input.sku !== undefined) {
      const other = await findProductBySku(this.db, input.sku);
      if (other && other.id !== id) throw skuExists();
      patch.sku = input.sku;
    }
    if (input.name !== undefined) patch.name = input.name;
    if (input.stock !== undefined) patch.stock = input.stock;
    if (input.is_active !== undefined) patch.is_active = input.is_active;
    try {
      const updated = await updateProduct(this.db, id, patch);
      if (!updated) throw productNotFound();
      return updated;
    } catch (err) {
      if (isUniqueViolation(err)) throw skuExists();
      throw err;
    }
  }
}
