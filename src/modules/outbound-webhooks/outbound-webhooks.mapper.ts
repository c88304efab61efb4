import type { WebhookDeliveryRow, WebhookMessageStatus, WebhookSubscriptionRow } from './outbound-webhooks.tables.ts';
import type { ApiVersion } from '../../http/api-version.ts';
import { iso, isoOrNull } from '../../http/common.schemas.ts';
import { overlapEnd } from './sender.ts';
import type { DeliveryListRow, MessageState } from './messages.repository.ts';
import type { BucketCounts, MessageWithAttempts } from './subscriptions.service.ts';

export function toSubscription(version: ApiVersion, s: WebhookSubscriptionRow) {
  return {
    ...(version === 'v1' ? {} : { api_version: s.api_version }),
    id: s.id,
    url: s.url,
    events: s.events,
    description: s.description,
    is_active: s.is_active,
    disabled_reason: s.disabled_reason,
    disabled_at: isoOrNull(s.disabled_at),
    previous_secret_expires_at: isoOrNull(overlapEnd(s)),
    created_at: iso(s.created_at),
    updated_at: isoOrNull(s.updated_at),
  };
}

/** Only the create and rotate-secret responses carry the secret. */
export function toSubscriptionWithSecret(version: ApiVersion, s: WebhookSubscriptionRow) {
  return { ...toSubscription(version, s), secret: s.secret };
}

function messageState(status: WebhookMessageStatus): MessageState {
  return status === 'held' || status === 'queued' ? 'pending' : status;
}

function toAttemptSummary(d: WebhookDeliveryRow) {
  return {
    attempt: d.attempt,
    created_at: iso(d.created_at),
    status_code: d.status_code,
    duration_ms: d.duration_ms,
    success: d.success,
    error: d.error,
  };
}

export function toDelivery(d: DeliveryListRow) {
  return {
    ...toAttemptSummary(d),
    id: d.id,
    event_id: d.event_id,
    event_type: d.event_type,
    order_id: d.order_id,
    message_id: d.message_id,
    message_status: d.message_status === null ? null : messageState(d.message_status),
  };
}

/** A message in the list: its state and its attempts, without the body and headers. */
export function toMessageSummary({ message: m, attempts }: MessageWithAttempts) {
  return {
    message_id: m.message_id,
    event_id: m.event_id,
    event_type: m.event_type,
    order_id: m.order_id,
    status: messageState(m.status),
    created_at: iso(m.created_at),
    settled_at: isoOrNull(m.settled_at),
    attempts: attempts.map(toAttemptSummary),
  };
}

const rate = (c: { succeeded: number; failed: number }) => (c.succeeded + c.failed === 0 ? null : c.succeeded / (c.succeeded + c.failed));

export function toSubscriptionStats(subscriptionId: number, s: { bucket: 'hour' | 'day'; from: Date; to: Date; buckets: BucketCounts[] }) {
  const succeeded = s.buckets.reduce((n, b) => n + b.succeeded, 0);
  const failed = s.buckets.reduce((n, b) => n + b.failed, 0);
  return {
    subscription_id: subscriptionId,
    bucket: s.bucket,
    from: iso(s.from),
    to: iso(s.to),
    succeeded,
    failed,
    success_rate: rate({ succeeded, failed }),
    buckets: s.buckets.map((b) => ({ start: iso(b.start), succeeded: b.succeeded, failed: b.failed, success_rate: rate(b) })),
  };
}

export function toMessage({ message: m, attempts }: MessageWithAttempts) {
  return {
    ...toMessageSummary({ message: m, attempts: [] }),
    subscription_id: m.subscription_id,
    body: m.payload,
    headers: attempts.at(-1)?.request_headers ?? null,
    attempts: attempts.map((d) => ({ ...toAttemptSummary(d), response_body: d.response_body, headers: d.request_headers })),
  };
}
