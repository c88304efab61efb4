import { Type, type Static } from 'typebox';
import { IdOf, NonBlank, Timestamp } from '../../http/common.schemas.ts';

const ItemName = NonBlank({ maxLength: 100, description: '1 to 100 characters' });
const Description = Type.Union([Type.String({ maxLength: 500 }), Type.Null()], { description: 'at most 500 characters' });
/** an upper bound keeps a price a finite, exactly comparable double (and 1e309 out: it parses to Infinity) */
export const MAX_ITEM_PRICE = 1_000_000_000_000;
const Price = Type.Number({ exclusiveMinimum: 0, maximum: MAX_ITEM_PRICE, description: `greater than 0, at most ${MAX_ITEM_PRICE}` });

export const Item = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  price: Type.Number(),
  is_active: Type.Boolean(),
  user_id: Type.Integer(),
  created_at: Timestamp,
});

export const ItemList = Type.Array(Item, { description: "The caller's items, ordered by id" });

const ItemFields = { name: ItemName, description: Type.Optional(Description), price: Price };

export const ItemCreateBody = Type.Object(
  { ...ItemFields, is_active: Type.Optional(Type.Boolean({ default: true })) },
  { additionalProperties: false, examples: [{ name: 'Reading lamp', description: 'Brass desk lamp with a linen shade', price: 34.9 }] },
);
export type ItemCreateBody = Static<typeof ItemCreateBody>;

export const ItemUpdateBody = Type.Object(
  { ...Type.Partial(Type.Object(ItemFields)).properties, is_active: Type.Optional(Type.Boolean()) },
  { additionalProperties: false, examples: [{ price: 29.9 }] },
);
export type ItemUpdateBody = Static<typeof ItemUpdateBody>;

export const ItemListQuery = Type.Object({
  skip: Type.Integer({ minimum: 0, maximum: 2147483647, default: 0 }),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  is_active: Type.Optional(Type.Boolean()),
});
export type ItemListQuery = Static<typeof ItemListQuery>;

export const ItemIdParams = Type.Object({ item_id: IdOf(1) });
