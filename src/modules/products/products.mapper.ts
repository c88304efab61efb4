import type { ProductRow } from './products.tables.ts';
import { iso } from '../../http/common.schemas.ts';
import { moneyToNumber } from './money.ts';

export function toProduct(p: ProductRow) {
  return {
    id: p.id,
    sku: p.sku,
    name: p.name,
    price: moneyToNumber(p.price),
    stock: p.stock,
    is_active: p.is_active,
    created_at: iso(p.created_at),
    updated_at: iso(p.updated_at),
  };
}
