import { Type, type Static } from 'typebox';
import { Id, NonBlank, Page, PageQuery, Timestamp } from '../../http/common.schemas.ts';

const Status = Type.Union([Type.Literal('pending'), Type.Literal('processing'), Type.Literal('completed'), Type.Literal('failed')]);

/** Lines and quantities are integers here; their business limits (1–1000, known product) are 400s. */
const OrderLineInput = Type.Object(
  {
    product_id: Type.Integer({ description: 'an active product' }),
    quantity: Type.Integer({ description: '1 to 1000' }),
  },
  { additionalProperties: false },
);

export const OrderCreateBody = Type.Object(
  {
    items: Type.Array(OrderLineInput, { minItems: 1, maxItems: 100, description: '1 to 100 lines' }),
    shipping_address: NonBlank({ maxLength: 500, description: '1 to 500 characters' }),
  },
  { additionalProperties: false },
);
export type OrderCreateBody = Static<typeof OrderCreateBody>;

export const OrderCreateHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'repeat a request safely: the same key and body within 24 h replays the first response',
    }),
  ),
});
export type OrderCreateHeaders = Static<typeof OrderCreateHeaders>;

export const OrderCreated = Type.Object({
  id: Type.Integer(),
  user_id: Type.Integer(),
  status: Status,
  total_amount: Type.Number({ description: '0 until the background job has priced the order' }),
  items: Type.Array(
    Type.Object({
      product_id: Type.Integer(),
      quantity: Type.Integer(),
      unit_price: Type.Number({ description: '0 until the background job has priced the order' }),
    }),
  ),
  created_at: Timestamp,
});
export type OrderCreated = Static<typeof OrderCreated>;

export const OrderSummary = Type.Object({
  id: Type.Integer(),
  user_id: Type.Integer(),
  status: Status,
  total_amount: Type.Number(),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const OrderPage = Page(OrderSummary, "A page of the caller's orders, newest first");

export const OrderDetail = Type.Object({
  id: Type.Integer(),
  user_id: Type.Integer(),
  status: Status,
  total_amount: Type.Number(),
  shipping_address: Type.String(),
  items: Type.Array(
    Type.Object({
      id: Type.Integer(),
      product_id: Type.Integer(),
      product_name: Type.String(),
      quantity: Type.Integer(),
      unit_price: Type.Number(),
    }),
  ),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const OrderAction = Type.Object({
  status: Type.String(),
  message: Type.String(),
  order_id: Type.Integer(),
});

export const OrderListQuery = Type.Object({
  ...PageQuery,
  status: Type.Optional(Status),
});
export type OrderListQuery = Static<typeof OrderListQuery>;

export const OrderIdParams = Type.Object({ order_id: Id });
export type OrderIdParams = Static<typeof OrderIdParams>;
