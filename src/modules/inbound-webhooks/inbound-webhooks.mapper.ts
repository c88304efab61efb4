import type { InboundWebhookRow } from './inbound-webhooks.tables.ts';
import { iso, isoOrNull } from '../../http/common.schemas.ts';
import type { InboundWebhookSummaryRow } from './inbound-webhooks.repository.ts';

/** The header that carries the platform's signature: never shown. */
const SIGNATURE_HEADER = 'x-shopify-hmac-sha256';

export function toInboundWebhookSummary(r: InboundWebhookSummaryRow) {
  return {
    id: r.id,
    webhook_id: r.webhook_id,
    topic: r.topic,
    shop_domain: r.shop_domain,
    status: r.status,
    error: r.error,
    order_id: r.order_id,
    received_at: iso(r.received_at),
    processed_at: isoOrNull(r.processed_at),
  };
}

export function toInboundWebhookDetail(r: InboundWebhookRow) {
  const stored = Object.entries((r.headers ?? {}) as Record<string, unknown>);
  return {
    ...toInboundWebhookSummary(r),
    headers: Object.fromEntries(stored.filter((h): h is [string, string] => h[0].toLowerCase() !== SIGNATURE_HEADER && typeof h[1] === 'string')),
    raw_body: r.raw_body,
    raw_body_encoding: r.raw_body === null ? null : r.raw_body_encoding,
    payload_purged_at: isoOrNull(r.payload_purged_at),
  };
}
