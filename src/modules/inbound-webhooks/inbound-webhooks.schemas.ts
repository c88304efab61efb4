import { Type, type Static } from 'typebox';
import { CappedPage, IdOf, NullableText, NullableTimestamp, PageQuery, Timestamp } from '../../http/common.schemas.ts';
import { MAX_ORDER_LINES } from '../orders/orders.schemas.ts';
import { MAX_QUANTITY } from '../orders/orders.service.ts';
import { ShopifyCancellationPayload, ShopifyOrderPayload } from './shopify-order.ts';

export const Received = Type.Object({
  status: Type.String({ description: '`received`' }),
  webhook_id: Type.String({ description: 'X-Shopify-Webhook-Id, or `sha256:<hex>` of the body when the header is absent' }),
  duplicate: Type.Boolean({ description: 'true when this webhook id was already stored (it is not processed again)' }),
});

const ORDER = ShopifyOrderPayload.properties;
const STORED_NOT_REFUSED =
  'Every other field is stored with the webhook only. A correctly signed body that lacks what is required is still answered 200: ' +
  'its processing records it `failed` with the reason (GET /admin/inbound-webhooks/{id} shows it).';

/** The orders/create payload's fields as documented (the raw body is checked when processed); a spread drops TypeBox's optional mark. */
export const PlatformOrderBody = Type.Object(
  {
    id: { ...ORDER.id, description: "required: the platform's order id (an integer from 1, or text without spaces); one order per id" },
    email: Type.Optional({ ...ORDER.email, description: "the customer's e-mail: required here, in `contact_email` or in `customer.email` (the first one given is used)" }),
    contact_email: Type.Optional({ ...ORDER.contact_email, description: 'the e-mail, when `email` is empty' }),
    customer: Type.Optional({
      ...ORDER.customer,
      description: "`email` (when the two above are empty), `first_name` and `last_name`: the account made for a new customer (named after the e-mail's local part without them)",
    }),
    shipping_address: Type.Optional({
      ...ORDER.shipping_address,
      description: "joined into the order's address (`name` or `first_name` `last_name`, `address1`, `address2`, `city`, `province_code` or `province` and `zip`, `country_code` or `country`); without one, `No shipping address provided`",
    }),
    line_items: {
      ...ORDER.line_items,
      description:
        `required: 1 to ${MAX_ORDER_LINES} lines, each with \`sku\` (required: the SKU of an active product) and \`quantity\` (required: an integer from 1; ` +
        `the lines of one SKU add up, to at most ${MAX_QUANTITY}); \`title\` only names a line without a SKU in the failure's reason`,
    },
  },
  {
    description: `The platform's order, as it sends it. ${STORED_NOT_REFUSED}`,
    // the shared fixture's order, for two products of the demo catalogue
    examples: [
      {
        id: 5512345678901,
        email: 'jane.doe@example.com',
        customer: { email: 'jane.doe@example.com', first_name: 'Jane', last_name: 'Doe' },
        shipping_address: { first_name: 'Jane', last_name: 'Doe', address1: '12 Harbour Street', city: 'Portland', province_code: 'ME', zip: '04101', country_code: 'US' },
        line_items: [
          { sku: 'DEMO-MUG', title: 'Ceramic Mug', quantity: 2 },
          { sku: 'DEMO-TSHIRT', title: 'Cotton T-Shirt', quantity: 1 },
        ],
      },
    ],
  },
);

/** The orders/cancelled payload as the documents show it (documentation only, as PlatformOrderBody). */
export const PlatformCancellationBody = Type.Object(
  {
    id: { ...ShopifyCancellationPayload.properties.id, description: "required: the platform's id of the order to cancel (as its orders/create gave it)" },
    cancel_reason: Type.Optional({
      ...ShopifyCancellationPayload.properties.cancel_reason,
      description: "the platform's reason (`customer`, `fraud`, `inventory`, `declined`, `other`), kept as the cancellation's reason",
    }),
  },
  { description: `The cancelled order, as the platform sends it. ${STORED_NOT_REFUSED}`, examples: [{ id: 5512345678901, cancel_reason: 'customer' }] },
);

export const InboundHeaders = Type.Object({
  'x-shopify-hmac-sha256': Type.Optional(Type.String({ description: 'base64 HMAC-SHA256 of the raw body' })),
  'x-shopify-webhook-id': Type.Optional(Type.String()),
  'x-shopify-topic': Type.Optional(Type.String({ description: '`orders/create`' })),
  'x-shopify-shop-domain': Type.Optional(Type.String()),
  'x-shopify-triggered-at': Type.Optional(Type.String()),
});

const InboundStatus = Type.Union([Type.Literal('received'), Type.Literal('processed'), Type.Literal('failed')], {
  description: '`received`: waiting to be processed; `processed`: it became (or was linked to) an order; `failed`: see `error`',
});
export const InboundWebhookSummary = Type.Object({
  id: Type.Integer(),
  webhook_id: Type.String({ description: 'X-Shopify-Webhook-Id, or `sha256:<hex>` of the body when the header was absent' }),
  topic: NullableText('X-Shopify-Topic'),
  shop_domain: NullableText('X-Shopify-Shop-Domain'),
  status: InboundStatus,
  error: NullableText('why processing failed; null unless `failed`'),
  order_id: Type.Union([Type.Integer(), Type.Null()], { description: 'the order it created or was linked to; null until then' }),
  received_at: Timestamp,
  processed_at: NullableTimestamp,
});

export const InboundWebhookPage = CappedPage(InboundWebhookSummary, 'A page of the stored platform webhooks, newest first');

export const InboundWebhookDetail = Type.Object({
  ...InboundWebhookSummary.properties,
  headers: Type.Record(Type.String(), Type.String(), {
    description: 'the platform headers stored with it (X-Shopify-*, Content-Type, User-Agent), without the signature header',
  }),
  raw_body: NullableText('the body exactly as received: its text, or its bytes in base64 (see `raw_body_encoding`); null once purged'),
  raw_body_encoding: Type.Union([Type.Literal('utf8'), Type.Literal('base64'), Type.Null()], {
    description: '`utf8`: `raw_body` is the text; `base64`: the body was not UTF-8 text (or held a NUL byte) and is its bytes in base64',
  }),
  payload_purged_at: Type.Union([Timestamp, Type.Null()], {
    description: 'when the retention purge removed the body and headers of this processed webhook; null while they are kept',
  }),
});

export const InboundListQuery = Type.Object({
  ...PageQuery,
  status: Type.Optional(InboundStatus),
  topic: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: '`orders/create` or `orders/cancelled`' })),
});
export type InboundListQuery = Static<typeof InboundListQuery>;

export const InboundIdParams = Type.Object({ id: IdOf(1) });

export const Reprocessed = Type.Object({
  status: Type.String({ description: '`queued`' }),
  message: Type.String(),
  order_id: Type.Union([Type.Integer(), Type.Null()], { description: 'the order the webhook is linked to; null when none yet' }),
});
