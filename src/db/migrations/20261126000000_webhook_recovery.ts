import type { Kysely } from 'kysely';
import { runDdl } from '../ddl.ts';

/**
 * Outgoing webhooks that a subscriber can recover and inspect:
 * - subscriptions keep when the service disabled them, and the secret they rotated away from with
 *   the time it stops signing (both signatures are sent until then);
 * - a message re-queued by resend or recover starts the retry schedule again: `retry_base` is the
 *   number of attempts it had made before;
 * - each attempt keeps the headers it was sent with and the first KiB of the response.
 * Error texts written before the delivery log became subscriber-safe (resolved addresses, resolver
 * messages) are replaced by the generic texts the service writes now.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    ALTER TABLE webhook_subscriptions
      ADD COLUMN disabled_at timestamptz,
      ADD COLUMN previous_secret text,
      ADD COLUMN previous_secret_expires_at timestamptz;
    UPDATE webhook_subscriptions SET disabled_at = coalesce(updated_at, created_at) WHERE NOT is_active AND deleted_at IS NULL;
    ALTER TABLE webhook_messages ADD COLUMN retry_base integer NOT NULL DEFAULT 0;
    ALTER TABLE webhook_deliveries
      ADD COLUMN request_headers jsonb,
      ADD COLUMN response_body text;
    CREATE INDEX webhook_messages_failed_idx ON webhook_messages (subscription_id, settled_at) WHERE status = 'failed';
    CREATE INDEX webhook_messages_subscription_order_idx ON webhook_messages (subscription_id, order_id) WHERE order_id IS NOT NULL;
    UPDATE webhook_deliveries SET error = ${genericError('error')} WHERE ${notGeneric('error')};
    UPDATE webhook_messages SET last_error = ${genericError('last_error')} WHERE ${notGeneric('last_error')};
  `);
}

/** Texts that never carried internal detail: a receiver's own answer, a timeout, a disabled subscription. */
const notGeneric = (column: string) =>
  `${column} IS NOT NULL AND ${column} NOT LIKE 'HTTP %' AND ${column} NOT LIKE 'timeout after %' AND ${column} <> 'subscription is disabled or deleted'`;

/** The generic text of an old error, from the error code or message it contains. */
const genericError = (column: string) => `CASE
      WHEN ${column} LIKE '%non-public address%' OR ${column} LIKE 'url must%' OR ${column} LIKE '%EUNSAFETARGET%' THEN 'target address not allowed'
      WHEN ${column} LIKE '%ENOTFOUND%' OR ${column} LIKE '%EAI_AGAIN%' OR ${column} LIKE '%no usable address%' THEN 'host not found'
      WHEN ${column} LIKE '%ECONNREFUSED%' THEN 'connection refused'
      WHEN ${column} LIKE '%ECONNRESET%' OR ${column} LIKE '%EPIPE%' OR ${column} LIKE '%UND_ERR_SOCKET%' THEN 'connection reset'
      WHEN ${column} LIKE '%EHOSTUNREACH%' OR ${column} LIKE '%ENETUNREACH%' THEN 'host unreachable'
      WHEN ${column} LIKE '%TIMEOUT%' OR ${column} LIKE '%ETIMEDOUT%' THEN 'timeout after 15 s'
      WHEN ${column} LIKE '%CERT%' OR ${column} LIKE '%TLS%' OR ${column} LIKE '%SSL%' THEN 'TLS error'
      ELSE 'connection failed'
    END`;

export async function down(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    DROP INDEX webhook_messages_subscription_order_idx;
    DROP INDEX webhook_messages_failed_idx;
    ALTER TABLE webhook_deliveries DROP COLUMN response_body, DROP COLUMN request_headers;
    ALTER TABLE webhook_messages DROP COLUMN retry_base;
    ALTER TABLE webhook_subscriptions DROP COLUMN previous_secret_expires_at, DROP COLUMN previous_secret, DROP COLUMN disabled_at;
  `);
}
