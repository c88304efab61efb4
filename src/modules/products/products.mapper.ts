import type { ProductRow } from './products.tables.ts';
import { iso } from '../../http/common.schemas.ts';
import { moneyToNumber } from './money.ts';

export function toProduct(p: ProductRow) {
  return { ...p, price: moneyToNumber(p.price), created_at: iso(p.created_at), updated_at: iso(p.updated_at) };
}
