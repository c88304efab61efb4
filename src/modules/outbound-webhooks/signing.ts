import crypto from 'node:crypto';

/** Standard Webhooks secrets: `whsec_` + base64 of 24 random bytes (192 bits). */
export function newSubscriptionSecret(): string {
  return `whsec_${crypto.randomBytes(24).toString('base64')}`;
}

/**
 * `webhook-signature` per Standard Webhooks: `v1,` + base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`
 * keyed with the base64-decoded part of the secret after `whsec_`.
 */
export function signStandardWebhook(secret: string, messageId: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
  const mac = crypto.createHmac('sha256', key).update(`${messageId}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}
