import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';

/** timestamptz: read as Date, written as Date or ISO string, defaulted by the database. */
type CreatedAt = ColumnType<Date, Date | string | undefined, Date | string>;
type Timestamp = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
/** numeric(12,2): pg returns a string; written as a string or number. */
type Money = ColumnType<string, string | number | undefined, string | number>;
type Json = ColumnType<unknown, string, string>;

export type OrderStatus = 'pending' | 'processing' | 'completed' | 'failed';

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
  /** bumped on password change; refresh tokens issued before it are refused */
  password_changed_at: NullableTimestamp;
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
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

export interface OrderItemsTable {
  id: Generated<number>;
  order_id: number;
  product_id: number;
  product_name: string | null;
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
  created_at: CreatedAt;
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
  /** the body as received: its text, or its bytes in base64 when `raw_body_encoding` says so */
  raw_body: string;
  /** `base64` for a body that is not UTF-8 text PostgreSQL can hold (invalid UTF-8, or a NUL byte) */
  raw_body_encoding: ColumnType<InboundBodyEncoding, InboundBodyEncoding | undefined, InboundBodyEncoding>;
  status: ColumnType<InboundWebhookStatus, InboundWebhookStatus | undefined, InboundWebhookStatus>;
  error: string | null;
  order_id: number | null;
  received_at: CreatedAt;
  processed_at: NullableTimestamp;
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
  last_error: string | null;
  created_at: CreatedAt;
  settled_at: NullableTimestamp;
}

/** live (not deleted) users by is_active, maintained by a trigger on users */
export interface UserCountsTable {
  is_active: boolean;
  total: number;
}

export interface Database {
  users: UsersTable;
  user_counts: UserCountsTable;
  refresh_tokens: RefreshTokensTable;
  products: ProductsTable;
  orders: OrdersTable;
  order_items: OrderItemsTable;
  order_events: OrderEventsTable;
  idempotency_keys: IdempotencyKeysTable;
  items: ItemsTable;
  inbound_webhooks: InboundWebhooksTable;
  webhook_subscriptions: WebhookSubscriptionsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_messages: WebhookMessagesTable;
}

export type UserRow = Selectable<UsersTable>;
export type NewUser = Insertable<UsersTable>;
export type UserUpdate = Updateable<UsersTable>;
export type ProductRow = Selectable<ProductsTable>;
export type OrderRow = Selectable<OrdersTable>;
export type OrderItemRow = Selectable<OrderItemsTable>;
export type OrderEventRow = Selectable<OrderEventsTable>;
export type ItemRow = Selectable<ItemsTable>;
export type InboundWebhookRow = Selectable<InboundWebhooksTable>;
export type WebhookSubscriptionRow = Selectable<WebhookSubscriptionsTable>;
export type WebhookDeliveryRow = Selectable<WebhookDeliveriesTable>;
export type WebhookMessageRow = Selectable<WebhookMessagesTable>;
