import type { Generated, Selectable } from 'kysely';
import type { CreatedAt, Money } from '../../db/schema.ts';

export interface ProductsTable {
  id: Generated<number>;
  sku: string;
  name: string;
  price: Money;
  stock: number;
  is_active: Generated<boolean>;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

export type ProductRow = Selectable<ProductsTable>;
