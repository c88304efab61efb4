import { Type, type Static, type TSchema } from 'typebox';
import type { OrderStatus } from '../../db/schema.ts';
import type { ApiVersion } from '../../http/api-version.ts';
import { CappedPage, IdOf, NonBlank, NullableText, NullableTimestamp, Page, PageQuery, ruleBounds, Timestamp } from '../../http/common.schemas.ts';
import { MAX_ID } from '../../http/path-ids.ts';

const STATUSES: readonly OrderStatus[] = ['pending', 'processing', 'completed', 'failed', 'cancelled'];
/** The order statuses of a version: v1 has no `cancelled` (its clients read such an order as `failed`). */
const StatusOf = (version: ApiVersion) => Type.Union(STATUSES.filter((s) => version === 'v2' || s !== 'cancelled').map((s) => Type.Literal(s)));

export const MAX_ORDER_LINES = 100;

/** The lines' business limits (1–1000, known product) are 400s, so the quantity's bounds are for the documents only. */
const OrderLineInput = Type.Object(
  {
    product_id: Type.Integer({ description: 'an active product (otherwise 400 `INVALID_PRODUCT`)' }),
    quantity: Type.Integer({ description: '1 to 1000 (otherwise 400 `INVALID_QUANTITY`)', ...ruleBounds(1, 1000) }),
  },
  { additionalProperties: false },
);

export const OrderCreateBody = Type.Object(
  {
    items: Type.Array(OrderLineInput, { minItems: 1, maxItems: MAX_ORDER_LINES, description: `1 to ${MAX_ORDER_LINES} lines` }),
    shipping_address: NonBlank({ maxLength: 500, description: '1 to 500 characters' }),
  },
  {
    additionalProperties: false,
    // the demo catalogue's first product (a fresh start seeds it)
    examples: [{ items: [{ product_id: 1, quantity: 1 }], shipping_address: '221B Baker Street, London NW1 6XE, United Kingdom' }],
  },
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

export const OrderCreated = Type.Object({
  id: Type.Integer(),
  user_id: Type.Integer(),
  // the order as just created is `pending` in every version
  status: StatusOf('v1'),
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

export const OrderAction = Type.Object({
  status: Type.String(),
  message: Type.String(),
  order_id: Type.Integer(),
});

export const OrderIdParams = Type.Object({ order_id: IdOf(1) });

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
export type FailureDetails = Static<typeof FailureDetails>;

const SourceOf = (description: string) => Type.Union([Type.Literal('api'), Type.Literal('platform')], { description });

/** ISO 8601: a date-time with its offset, or a date (a whole day, UTC). */
const Instant = (description: string) => Type.Union([Type.String({ format: 'date-time' }), Type.String({ format: 'date' })], { description });

const Customer = Type.Object(
  { id: Type.Integer(), email: Type.String(), name: Type.String() },
  { description: "the order's owner (the user `user_id` names)" },
);

const SEARCH =
  'an order number (all digits: that order), or the start of the customer\'s e-mail or name, or of words of the name, in any case ' +
  '(`jane` finds jane.doe@example.com and Jane Doe, `doe` and `ja do` find Jane Doe); 1 to 200 characters';

const V2_ORDER_FIELDS = {
  failure_reason: NullableText('why the order failed (`INSUFFICIENT_STOCK`, `PRODUCT_UNAVAILABLE`, `TOTAL_TOO_LARGE`, `PROCESSING_ERROR`); null unless it is `failed`'),
  cancelled_at: { ...NullableTimestamp, description: 'when it was cancelled; null unless it is `cancelled`' },
};

/** The order schemas of one API version (the routes are the same, these and the mappers differ); queries are typed as v2's. */
function buildOrderSchemas(version: ApiVersion) {
  const Status = StatusOf(version);
  const v2 = version === 'v2' ? V2_ORDER_FIELDS : {};
  const head = { id: Type.Integer(), user_id: Type.Integer(), status: Status, total_amount: Type.Number() };
  const times = { created_at: Timestamp, updated_at: Timestamp };
  const OrderSummary = Type.Object({ ...head, ...v2, ...times });
  const OrderDetail = Type.Object({
    ...head,
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
    ...v2,
    ...times,
  });
  const OrderEvent = Type.Object({
    sequence: Type.Integer({ description: "1, 2, 3 … in the order's history" }),
    type: Type.String({ description: '`order.created` or `order.status_changed`' }),
    previous_status: Type.Union([Status, Type.Null()], { description: 'null for `order.created`' }),
    status: Status,
    reason: NullableText(
      version === 'v1'
        ? 'why the order failed, on the event that moved it to `failed` (`INSUFFICIENT_STOCK`, `PRODUCT_UNAVAILABLE`, `TOTAL_TOO_LARGE`, `PROCESSING_ERROR`, `CANCELLED`); else null'
        : 'why the order failed, on the event that moved it to `failed` (`INSUFFICIENT_STOCK`, `PRODUCT_UNAVAILABLE`, `TOTAL_TOO_LARGE`, `PROCESSING_ERROR`), or the reason given for its cancellation (null when none was), on the event that moved it to `cancelled`; else null',
    ),
    details: Type.Union([FailureDetails, Type.Null()], { description: 'what the failure concerned: the short lines of a stock failure; else null' }),
    created_at: Timestamp,
  });
  const OrderEventList = Type.Array(OrderEvent, { description: "The order's events, oldest first" });
  const AdminOrderFields = {
    source: SourceOf('`api`: placed through POST /orders; `platform`: created from an e-commerce platform\'s webhook'),
    external_id: NullableText("the platform's own order id; null for API orders"),
    failure_reason: NullableText(
      version === 'v1' ? 'why the order failed (`CANCELLED` for a cancelled order); null unless it is `failed`' : 'why the order failed; null unless it is `failed`',
    ),
    ...(version === 'v2' ? { cancelled_at: V2_ORDER_FIELDS.cancelled_at } : {}),
  };
  const AdminOrderSummary = Type.Object({ ...head, ...AdminOrderFields, ...times, ...(version === 'v2' ? { customer: Customer } : {}) });
  const statusFilter = Type.Optional({
    ...Status,
    description: version === 'v1' ? '`failed` includes the orders that will not be fulfilled for any reason' : 'one status',
  });
  // v2's search: one box for an order number, or the start of the customer's e-mail or name (typed in v1 too, never received)
  const v2Search = { q: Type.Optional(NonBlank({ maxLength: 200, description: SEARCH })) };
  const search = version === 'v2' ? v2Search : ({} as typeof v2Search);
  const AdminOrderListQuery = Type.Object({
    ...PageQuery,
    ...search,
    status: statusFilter,
    user_id: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_ID, description: "the owner's id" })),
    customer_email: Type.Optional(
      Type.String({ minLength: 1, maxLength: 254, description: "the owner's e-mail, in any case (`jane.doe@example.com`)" }),
    ),
    source: Type.Optional(SourceOf('`platform`: orders from any inbound platform')),
    external_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: "a platform's order id (`820982911946154508`)" })),
    created_from: Type.Optional(Instant('created at or after: `2026-01-31T08:00:00Z`, or a date for the start of that day (UTC)')),
    created_to: Type.Optional(Instant('created at or before: `2026-01-31T18:00:00+02:00`, or a date for the whole of that day (UTC)')),
  });
  return {
    OrderPage: Page(OrderSummary, "A page of the caller's orders, newest first") as TSchema,
    OrderDetail: OrderDetail as TSchema,
    OrderEventList: OrderEventList as TSchema,
    AdminOrderPage: CappedPage(AdminOrderSummary, "A page of every user's orders, newest first") as TSchema,
    AdminOrderDetail: Type.Object({ ...OrderDetail.properties, ...AdminOrderFields, events: OrderEventList }) as TSchema,
    OrderListQuery: Type.Object({ ...PageQuery, status: statusFilter }),
    AdminOrderListQuery,
    // the list's filters without its paging
    AdminOrderExportQuery: Type.Omit(AdminOrderListQuery, ['page', 'page_size']),
  };
}

/** The order schemas of each version, built once. */
export const orderSchemas = { v1: buildOrderSchemas('v1'), v2: buildOrderSchemas('v2') };

export type OrderListQuery = Static<ReturnType<typeof buildOrderSchemas>['OrderListQuery']>;
export type AdminOrderListQuery = Static<ReturnType<typeof buildOrderSchemas>['AdminOrderListQuery']>;
export type AdminOrderFilterQuery = Omit<AdminOrderListQuery, 'page' | 'page_size'>;

export const OrderCancelBody = Type.Union(
  [
    Type.Object(
      { reason: Type.Optional(Type.String({ maxLength: 500, description: 'why the order is cancelled (up to 500 characters)' })) },
      { additionalProperties: false },
    ),
    Type.Null(),
  ],
  { description: 'optional: no body cancels without a reason', examples: [{ reason: 'Ordered the wrong size by mistake.' }] },
);
export type OrderCancelBody = Static<typeof OrderCancelBody>;
