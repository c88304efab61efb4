import type { WebhookDeliveryRow, WebhookSubscriptionRow } from '../../db/schema.ts';
import { iso, isoOrNull } from '../../http/common.schemas.ts';

export function toSubscription(s: WebhookSubscriptionRow) {
  return {
    id: s.id,
    url: s.url,
    events: s.events,
    description: s.description,
    is_active: s.is_active,
    disabled_reason: s.disabled_reason,
    created_at: iso(s.created_at),
    updated_at: isoOrNull(s.updated_at),
  };
}

/** Only the create and rotate-secret responses carry the secret. */
export function toSubscriptionWithSecret(s: WebhookSubscriptionRow) {
  return { ...toSubscription(s), secret: s.secret };
}

export function toDelivery(d: WebhookDeliveryRow) {
  return {
    id: d.id,
    event_id: d.event_id,
    event_type: d.event_type,
    message_id: d.message_id,
    attempt: d.attempt,
    status_code: d.status_code,
    duration_ms: d.duration_ms,
    success: d.success,
    error: d.error,
    created_at: iso(d.created_at),
  };
}
