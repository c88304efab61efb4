import crypto from 'node:crypto';
import type { WebhookSubscriptionRow } from '../../db/schema.ts';

/** Standard Webhooks secrets: `whsec_` + base64 of 24 random bytes (192 bits). */
export function newSubscriptionSecret(): string {
  return `whsec_${crypto.randomBytes(24).toString('base64')}`;
}

/** `webhook-signature` per Standard Webhooks: `v1,` + base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`. */
export function signStandardWebhook(secret: string, messageId: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
  const mac = crypto.createHmac('sha256', key).update(`${messageId}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** When the secret before the last rotation stops signing; null when it does not sign (any more). */
export function overlapEnd(subscription: WebhookSubscriptionRow, now = Date.now()): Date | null {
  const expires = subscription.previous_secret_expires_at;
  if (subscription.previous_secret === null || expires === null) return null;
  const end = new Date(expires);
  return end.getTime() > now ? end : null;
}
