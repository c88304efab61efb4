import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';

/** timestamptz: read as Date, written as Date or ISO string, defaulted by the database. */
type CreatedAt = ColumnType<Date, Date | string | undefined, Date | string>;
type Timestamp = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
/** numeric(12,2): pg returns a string; written as a string or number. */
type Money = ColumnType<string, string | number | undefined, string | number>;
type Json = ColumnType<unknown, string, string>;

export type OrderStatus = 'pending' | 'processing' | 'completed' | 'failed' | 'cancelled';

export interface UsersTable {
  id: Generated<number>;
  email: string;
  full_name: string;
  password_hash: string | null;
  is_active: Generated<boolean>;
  is_admin: Generated<boolean>;
  created_at: CreatedAt;
  updated_at: NullableTimestamp;
  deleted_at: NullableTimestamp;
  password_changed_at: NullableTimestamp;
  /** the time of the last session cut-off; judges only tokens issued before sessions_generation existed */
  sessions_valid_after: NullableTimestamp;
  /** every session cut-off adds one; a token carries the generation it was issued in (migration 20261222000100) */
  sessions_generation: Generated<number>;
  /** created without a password (a platform customer): setting one through password recovery activates it */
  awaiting_password: Generated<boolean>;
  /** the holder proved the address (see migration 20261214000000); only verified addresses link platform orders */
  email_verified: Generated<boolean>;
}

export interface PasswordResetTokensTable {
  id: Generated<number>;
  user_id: number;
  /** SHA-256 of the token, hex; the token itself is only ever in the e-mail */
  token_hash: string;
  /** the address the token was sent to: a token is void once the account's e-mail changes */
  email: string;
  expires_at: Timestamp;
  used_at: NullableTimestamp;
  /** revoked when the user's sessions end (password changed, deactivated, deleted) */
  revoked_at: NullableTimestamp;
  created_at: CreatedAt;
}

export interface EmailTokensTable {
  id: Generated<number>;
  user_id: number;
  /** `verify`: confirms a new address (sent to it); `revert`: undoes a change (sent to the previous address) */
  purpose: 'verify' | 'revert';
  /** SHA-256 of the token, hex */
  token_hash: string;
  /** `verify`: the address to confirm; `revert`: the address to restore */
  email: string;
  expires_at: Timestamp;
  used_at: NullableTimestamp;
  created_at: CreatedAt;
  /** the change the token belongs to; null for confirmation tokens of earlier releases */
  change_id: number | null;
}

/** Every change of an account's e-mail, in order; a revert undoes its change and every later one. */
export interface EmailChangesTable {
  id: Generated<number>;
  user_id: number;
  previous_email: string;
  /** null for the changes of earlier releases (only their revert token was known) */
  new_email: string | null;
  changed_at: CreatedAt;
  undone_at: NullableTimestamp;
}

/** A client that signed in to the account (decision 106): its sign-ins are throttled per device. */
export interface DeviceTokensTable {
  id: Generated<number>;
  user_id: number;
  /** SHA-256 of the token, hex */
  token_hash: string;
  expires_at: Timestamp;
  created_at: CreatedAt;
}

export interface RefreshTokensTable {
  jti: string;
  user_id: number;
  expires_at: Timestamp;
  revoked_at: NullableTimestamp;
  created_at: CreatedAt;
}

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

export interface OrdersTable {
  id: Generated<number>;
  user_id: number;
  status: ColumnType<OrderStatus, OrderStatus | undefined, OrderStatus>;
  total_amount: Money;
  shipping_address: string;
  failure_reason: string | null;
  source: ColumnType<string, string | undefined, string>;
  external_id: string | null;
  /** when it was cancelled; null unless it is `cancelled` */
  cancelled_at: NullableTimestamp;
  /** the trace (OpenTelemetry trace id) of the request or job that created it; null when not traced */
  trace_id: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

export interface OrderItemsTable {
  id: Generated<number>;
  order_id: number;
  product_id: number;
  product_name: string;
  quantity: number;
  unit_price: Money;
}

export interface OrderEventsTable {
  id: Generated<number>;
  order_id: number;
  user_id: number;
  type: string;
  previous_status: OrderStatus | null;
  status: OrderStatus;
  total_amount: Money;
  sequence: number;
  /** why the order failed (its failure_reason) or was cancelled, on the event that moved it there; else null */
  reason: ColumnType<string | null, string | null | undefined, string | null>;
  /** what the failure concerned (for a stock failure, the short lines); else null */
  details: ColumnType<unknown, string | null | undefined, string | null>;
  created_at: CreatedAt;
  /** handed to the order-event listeners (the outbox's mark, decision 017): false until the publishing job has */
  published: Generated<boolean>;
  /** the W3C traceparent active when the event was written (the listeners continue its trace); null untraced */
  traceparent: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface IdempotencyKeysTable {
  user_id: number;
  key: string;
  request_hash: string;
  response_status: number;
  response_body: Json;
  created_at: CreatedAt;
  expires_at: Timestamp;
}

export interface ItemsTable {
  id: Generated<number>;
  user_id: number;
  name: string;
  description: string | null;
  price: number;
  is_active: Generated<boolean>;
  created_at: CreatedAt;
  updated_at: NullableTimestamp;
  deleted_at: NullableTimestamp;
}

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

export interface WebhookSubscriptionsTable {
  id: Generated<number>;
  user_id: number;
  url: string;
  events: ColumnType<string[], string[], string[]>;
  description: string | null;
  secret: string;
  is_active: Generated<boolean>;
  consecutive_failures: Generated<number>;
  disabled_reason: string | null;
  /** when it was disabled (by the service or by its owner); null while active */
  disabled_at: NullableTimestamp;
  /** the secret before the last rotation: deliveries carry its signature too until it expires */
  previous_secret: string | null;
  previous_secret_expires_at: NullableTimestamp;
  /** the API version it was created under, whose rendering of order events it receives */
  api_version: ColumnType<'v1' | 'v2', 'v1' | 'v2' | undefined, 'v1' | 'v2'>;
  created_at: CreatedAt;
  updated_at: NullableTimestamp;
  deleted_at: NullableTimestamp;
}

export interface WebhookDeliveriesTable {
  id: Generated<number>;
  subscription_id: number;
  event_id: number | null;
  event_type: string;
  message_id: string;
  attempt: number;
  status_code: number | null;
  duration_ms: number | null;
  success: boolean;
  error: string | null;
  /** the headers the attempt was sent with (signature included) */
  request_headers: ColumnType<Record<string, string> | null, string | null | undefined, string | null>;
  /** the first KiB of the response body */
  response_body: string | null;
  created_at: CreatedAt;
}

export type WebhookMessageStatus = 'held' | 'queued' | 'delivered' | 'failed';

export interface WebhookMessagesTable {
  id: Generated<number>;
  message_id: string;
  subscription_id: number;
  event_id: number | null;
  order_id: number | null;
  event_type: string;
  payload: string;
  status: WebhookMessageStatus;
  attempts: Generated<number>;
  /** attempts made before the message was last re-queued (resend, recover): its retry schedule starts again there */
  retry_base: Generated<number>;
  last_error: string | null;
  /** the W3C traceparent of the span that wrote its event, continued by each delivery; null when not traced */
  traceparent: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: CreatedAt;
  settled_at: NullableTimestamp;
}

/** which order, platform webhook or outgoing message a queued job is about (pg-boss's job id) */
export interface JobLinksTable {
  job_id: string;
  queue: string;
  order_id: number | null;
  inbound_webhook_id: number | null;
  message_row_id: number | null;
  created_at: CreatedAt;
}

export interface Database {
  users: UsersTable;
  email_tokens: EmailTokensTable;
  email_changes: EmailChangesTable;
  device_tokens: DeviceTokensTable;
  job_links: JobLinksTable;
  refresh_tokens: RefreshTokensTable;
  password_reset_tokens: PasswordResetTokensTable;
  products: ProductsTable;
  orders: OrdersTable;
  order_items: OrderItemsTable;
  order_events: OrderEventsTable;
  idempotency_keys: IdempotencyKeysTable;
  items: ItemsTable;
  inbound_webhooks: InboundWebhooksTable;
  platform_cancellations: PlatformCancellationsTable;
  webhook_subscriptions: WebhookSubscriptionsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_messages: WebhookMessagesTable;
}

export type UserRow = Selectable<UsersTable>;
export type NewUser = Insertable<UsersTable>;
export type UserUpdate = Updateable<UsersTable>;
export type PasswordResetTokenRow = Selectable<PasswordResetTokensTable>;
export type ProductRow = Selectable<ProductsTable>;
export type OrderRow = Selectable<OrdersTable>;
export type OrderEventRow = Selectable<OrderEventsTable>;
export type ItemRow = Selectable<ItemsTable>;
export type InboundWebhookRow = Selectable<InboundWebhooksTable>;
export type WebhookSubscriptionRow = Selectable<WebhookSubscriptionsTable>;
export type WebhookDeliveryRow = Selectable<WebhookDeliveriesTable>;
export type WebhookMessageRow = Selectable<WebhookMessagesTable>;
