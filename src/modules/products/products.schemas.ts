import { Type, type Static } from 'typebox';
import { IdOf, NonBlank, Page, PageQuery, Timestamp } from '../../http/common.schemas.ts';
import { MoneyInput } from './money.ts';

const Sku = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$', description: 'unique; letters, digits, . _ -' });
const ProductName = NonBlank({ maxLength: 200 });
const Stock = Type.Integer({ minimum: 0, maximum: 2147483647, description: 'units on hand' });

export const Product = Type.Object({
  id: Type.Integer(),
  sku: Type.String(),
  name: Type.String(),
  price: Type.Number(),
  stock: Type.Integer(),
  is_active: Type.Boolean(),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const ProductPage = Page(Product, 'A page of products, ordered by id');

const ProductFields = { sku: Sku, name: ProductName, price: MoneyInput, stock: Stock };

export const ProductCreateBody = Type.Object(
  { ...ProductFields, is_active: Type.Optional(Type.Boolean({ default: true })) },
  { additionalProperties: false, examples: [{ sku: 'SCARF-WOOL-GREY', name: 'Grey Wool Scarf', price: 29.5, stock: 40 }] },
);
export type ProductCreateBody = Static<typeof ProductCreateBody>;

export const ProductUpdateBody = Type.Object(
  { ...Type.Partial(Type.Object(ProductFields)).properties, is_active: Type.Optional(Type.Boolean()) },
  { additionalProperties: false, examples: [{ stock: 120 }] },
);
export type ProductUpdateBody = Static<typeof ProductUpdateBody>;

export const ProductListQuery = Type.Object({
  ...PageQuery,
  is_active: Type.Optional(Type.Boolean({ description: 'administrators only; everyone else sees active products' })),
});
export type ProductListQuery = Static<typeof ProductListQuery>;

export const ProductIdParams = Type.Object({ product_id: IdOf(1) });
