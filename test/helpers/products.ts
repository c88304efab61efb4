import crypto from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { ProductRow } from '../../src/modules/products/products.tables.ts';
import { insertProduct } from '../../src/modules/products/products.repository.ts';

/** Inserts a product directly (no HTTP); a unique sku unless one is given. */
export async function createProduct(
  app: FastifyInstance,
  opts: { sku?: string; name?: string; price?: string; stock?: number; active?: boolean } = {},
): Promise<ProductRow> {
  return insertProduct(app.ctx.db, {
    sku: opts.sku ?? `SKU-${crypto.randomBytes(4).toString('hex')}`,
    name: opts.name ?? 'Test product',
    price: opts.price ?? '10.00',
    stock: opts.stock ?? 100,
    is_active: opts.active ?? true,
  });
}

export async function stockOf(app: FastifyInstance, productId: number): Promise<number> {
  const row = await app.ctx.db.selectFrom('products').select('stock').where('id', '=', productId).executeTakeFirstOrThrow();
  return row.stock;
}
