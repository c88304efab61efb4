import { Type, type Static } from 'typebox';
import { Id, NonBlank, Page, PageQuery, Timestamp } from '../../http/common.schemas.ts';
import { MAX_ID } from '../../http/path-ids.ts';

export const Status = Type.Union([Type.Literal('pending'), Type.Literal('processing'), Type.Literal('completed'), Type.Literal('failed')]);

/** The most lines one order may have. */
export const MAX_ORDER_LINES = 100;

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
    items: Type.Array(OrderLineInput, { minItems: 1, maxItems: MAX_ORDER_LINES, description: `1 to ${MAX_ORDER_LINES} lines` }),
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

const NullableText = (description: string) => Type.Union([Type.String(), Type.Null()], { description });

export const FailureDetails = Type.Object(
  {
    lines: Type.Array(
      Type.Object({
        product_id: Type.Integer(),
        requested: Type.Integer({ description: 'units the order asks for (its lines of this product together)' }),
        available: Type.Integer({ description: 'units in stock when the order was processed' }),
      }),
    ),
  },
  { description: 'for `INSUFFICIENT_STOCK`: every line the stock could not cover' },
);

export const OrderEvent = Type.Object({
  sequence: Type.Integer({ description: "1, 2, 3 … in the order's history" }),
  type: Type.String({ description: '`order.created` or `order.status_changed`' }),
  previous_status: Type.Union([Status, Type.Null()], { description: 'null for `order.created`' }),
  status: Status,
  reason: NullableText(
    'why the order failed, on the event that moved it to `failed` (`INSUFFICIENT_STOCK`, `PRODUCT_UNAVAILABLE`, `TOTAL_TOO_LARGE`, `PROCESSING_ERROR`); else null',
  ),
  details: Type.Union([FailureDetails, Type.Null()], { description: 'what the failure concerned: the short lines of a stock failure; else null' }),
  created_at: Timestamp,
});

export const OrderEventList = Type.Array(OrderEvent, { description: "The order's events, oldest first" });

const Source = Type.Union([Type.Literal('api'), Type.Literal('platform')], {
  description: '`api`: placed through POST /orders; `platform`: created from an e-commerce platform\'s webhook',
});

const AdminOrderFields = {
  source: Source,
  external_id: NullableText("the platform's own order id; null for API orders"),
  failure_reason: NullableText('why the order failed; null unless it is `failed`'),
};

export const AdminOrderSummary = Type.Object({
  id: Type.Integer(),
  user_id: Type.Integer(),
  status: Status,
  total_amount: Type.Number(),
  ...AdminOrderFields,
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const AdminOrderPage = Page(AdminOrderSummary, "A page of every user's orders, newest first");

export const AdminOrderDetail = Type.Object({
  ...OrderDetail.properties,
  ...AdminOrderFields,
  events: OrderEventList,
});

/** ISO 8601: a date-time with its offset, or a date (a whole day, UTC). */
const Instant = (description: string) =>
  Type.Union([Type.String({ format: 'date-time' }), Type.String({ format: 'date' })], { description });

export const AdminOrderListQuery = Type.Object({
  ...PageQuery,
  status: Type.Optional(Status),
  user_id: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_ID, description: "the owner's id" })),
  source: Type.Optional(Type.Union([Type.Literal('api'), Type.Literal('platform')], { description: '`platform`: orders from any inbound platform' })),
  external_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: "a platform's order id" })),
  created_from: Type.Optional(Instant('created at or after: `2026-01-31T08:00:00Z`, or a date for the start of that day (UTC)')),
  created_to: Type.Optional(Instant('created at or before: `2026-01-31T18:00:00+02:00`, or a date for the whole of that day (UTC)')),
});
export type AdminOrderListQuery = Static<typeof AdminOrderListQuery>;
