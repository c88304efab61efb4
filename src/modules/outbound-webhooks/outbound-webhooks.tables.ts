import type { ColumnType, Generated, Selectable } from 'kysely';
import type { CreatedAt, NullableTimestamp } from '../../db/schema.ts';

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

export type WebhookSubscriptionRow = Selectable<WebhookSubscriptionsTable>;
export type WebhookDeliveryRow = Selectable<WebhookDeliveriesTable>;
export type WebhookMessageRow = Selectable<WebhookMessagesTable>;
