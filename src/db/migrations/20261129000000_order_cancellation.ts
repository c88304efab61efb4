import type { Kysely } from 'kysely';
import { runDdl } from '../ddl.ts';

/**
 * Orders can be cancelled (API v2): the status `cancelled` and when it happened. A subscription
 * remembers the API version it was created under, whose rendering of order events it receives;
 * the existing ones were all created under v1. A platform's cancellation of an order it has not
 * sent yet waits in `platform_cancellations` until the order's creation arrives.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    ALTER TABLE orders DROP CONSTRAINT orders_status_check;
    ALTER TABLE orders ADD CONSTRAINT orders_status_check
      CHECK (status IN ('pending', 'processing', 'completed', 'failed', 'cancelled'));
    ALTER TABLE orders ADD COLUMN cancelled_at timestamptz;
    ALTER TABLE webhook_subscriptions ADD COLUMN api_version text NOT NULL DEFAULT 'v1'
      CHECK (api_version IN ('v1', 'v2'));
    CREATE TABLE platform_cancellations (
      source text NOT NULL,
      external_id text NOT NULL,
      inbound_webhook_id integer NOT NULL REFERENCES inbound_webhooks (id),
      reason text,
      received_at timestamptz NOT NULL DEFAULT now(),
      applied_at timestamptz,
      PRIMARY KEY (source, external_id)
    );
  `);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    DROP TABLE platform_cancellations;
    ALTER TABLE webhook_subscriptions DROP COLUMN api_version;
    ALTER TABLE orders DROP COLUMN cancelled_at;
    UPDATE orders SET status = 'failed', failure_reason = 'CANCELLED' WHERE status = 'cancelled';
    ALTER TABLE orders DROP CONSTRAINT orders_status_check;
    ALTER TABLE orders ADD CONSTRAINT orders_status_check CHECK (status IN ('pending', 'processing', 'completed', 'failed'));
  `);
}
