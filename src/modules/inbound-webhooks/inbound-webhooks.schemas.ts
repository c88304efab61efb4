import { Type, type Static } from 'typebox';
import { CappedPage, IdOf, NullableTimestamp, PageQuery, Timestamp } from '../../http/common.schemas.ts';

export const Received = Type.Object({
  status: Type.String({ description: '`received`' }),
  webhook_id: Type.String({ description: 'X-Shopify-Webhook-Id, or `sha256:<hex>` of the body when the header is absent' }),
  duplicate: Type.Boolean({ description: 'true when this webhook id was already stored (it is not processed again)' }),
});

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
const NullableText = (description: string) => Type.Union([Type.String(), Type.Null()], { description });

const InboundSummaryFields = {
  id: Type.Integer(),
  webhook_id: Type.String({ description: 'X-Shopify-Webhook-Id, or `sha256:<hex>` of the body when the header was absent' }),
  topic: NullableText('X-Shopify-Topic'),
  shop_domain: NullableText('X-Shopify-Shop-Domain'),
  status: InboundStatus,
  error: NullableText('why processing failed; null unless `failed`'),
  order_id: Type.Union([Type.Integer(), Type.Null()], { description: 'the order it created or was linked to; null until then' }),
  received_at: Timestamp,
  processed_at: NullableTimestamp,
};

export const InboundWebhookSummary = Type.Object(InboundSummaryFields);

export const InboundWebhookPage = CappedPage(InboundWebhookSummary, 'A page of the stored platform webhooks, newest first');

export const InboundWebhookDetail = Type.Object({
  ...InboundSummaryFields,
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
  status: Type.Optional({ ...InboundStatus, examples: ['processed'] }),
  topic: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'e.g. `orders/create`', examples: ['orders/create'] })),
});
export type InboundListQuery = Static<typeof InboundListQuery>;

export const InboundIdParams = Type.Object({ id: IdOf(1) });
export type InboundIdParams = Static<typeof InboundIdParams>;

export const Reprocessed = Type.Object({
  status: Type.String({ description: '`queued`' }),
  message: Type.String(),
  order_id: Type.Union([Type.Integer(), Type.Null()], { description: 'the order the webhook is linked to; null when none yet' }),
});
