import type { ColumnType, Generated, Selectable } from 'kysely';
import type { CreatedAt, NullableTimestamp, Json } from '../../db/schema.ts';

export type InboundWebhookStatus = 'received' | 'processed' | 'failed';
export type InboundBodyEncoding = 'utf8' | 'base64';

export interface InboundWebhooksTable {
  id: Generated<number>;
  webhook_id: string;
  topic: string | null;
  shop_domain: string | null;
  headers: Json;
  /** the body as received: its text, or its bytes in base64 when `raw_body_encoding` says so; null once purged */
  raw_body: ColumnType<string | null, string, string | null>;
  /** `base64` for a body that is not UTF-8 text PostgreSQL can hold (invalid UTF-8, or a NUL byte) */
  raw_body_encoding: ColumnType<InboundBodyEncoding, InboundBodyEncoding | undefined, InboundBodyEncoding>;
  status: ColumnType<InboundWebhookStatus, InboundWebhookStatus | undefined, InboundWebhookStatus>;
  error: string | null;
  order_id: number | null;
  received_at: CreatedAt;
  processed_at: NullableTimestamp;
  /** when the retention purge removed the body and headers (the row and its outcome stay) */
  payload_purged_at: NullableTimestamp;
  /** the platform's `X-Shopify-Event-Id`, unique when given */
  event_id: string | null;
  /** hex SHA-256 of the raw body: the same body within the replay window is the same delivery */
  body_sha256: string | null;
}

/** A platform's cancellation of one of its orders, kept until (and after) it is applied to the order. */
export interface PlatformCancellationsTable {
  source: string;
  external_id: string;
  inbound_webhook_id: number;
  reason: string | null;
  received_at: CreatedAt;
  /** when the order was cancelled for it; null while its order has not arrived */
  applied_at: NullableTimestamp;
}

export type InboundWebhookRow = Selectable<InboundWebhooksTable>;
