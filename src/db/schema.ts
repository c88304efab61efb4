import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';
import type { PasswordResetTokensTable, DeviceTokensTable, RefreshTokensTable } from '../modules/auth/auth.tables.ts';
import type { EmailTokensTable, EmailChangesTable } from '../modules/users/users.tables.ts';
import type { ProductsTable } from '../modules/products/products.tables.ts';
import type { ItemsTable } from '../modules/items/items.tables.ts';
import type { InboundWebhooksTable, PlatformCancellationsTable } from '../modules/inbound-webhooks/inbound-webhooks.tables.ts';
import type { WebhookSubscriptionsTable, WebhookDeliveriesTable, WebhookMessagesTable } from '../modules/outbound-webhooks/outbound-webhooks.tables.ts';

/** timestamptz: read as Date, written as Date or ISO string, defaulted by the database. */
export type CreatedAt = ColumnType<Date, Date | string | undefined, Date | string>;
export type Timestamp = ColumnType<Date, Date | string, Date | string>;
export type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
/** numeric(12,2): pg returns a string; written as a string or number. */
export type Money = ColumnType<string, string | number | undefined, string | number>;
export type Json = ColumnType<unknown, string, string>;
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

export interface OrdersTable {
  id: Generated<number>;
  user_id: number;
  status: ColumnType<OrderStatus, OrderStatus | undefined, OrderStatus>;
  total_amount: Money;
  shipping_address: string;
  failure_reason: string | null;
  source: ColumnType<string, string | undefined, string>;
  external_id: string | null;
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
export type OrderRow = Selectable<OrdersTable>;
export type OrderEventRow = Selectable<OrderEventsTable>;
