import type { Kysely } from 'kysely';
import { runDdl } from '../ddl.ts';

/**
 * What operating the service needs from the schema:
 * - order events carry why an order failed (`reason`) and, for a stock failure, the short lines;
 * - the indexes behind the administrators' order and platform-webhook lists, newest first, by
 *   each filter, and behind the trace of one order (its platform webhooks, messages and jobs);
 * - `job_links`: which order, platform webhook or outgoing message each queued job is about
 *   (pg-boss's id of it, recorded in the transaction that sends it);
 * - `purged_job_counts`: failed jobs the retention purge deleted, per queue, so the count of jobs
 *   failed for good survives the purge;
 * - a platform webhook's payload can be purged (the row, its status and its links stay);
 * - the indexes the retention purges walk.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    ALTER TABLE order_events ADD COLUMN reason text;
    ALTER TABLE order_events ADD COLUMN details jsonb;

    CREATE INDEX orders_created_idx ON orders (created_at DESC, id DESC);
    CREATE INDEX orders_status_created_idx ON orders (status, created_at DESC, id DESC);
    CREATE INDEX orders_platform_created_idx ON orders (created_at DESC, id DESC) WHERE source <> 'api';
    CREATE INDEX orders_external_id_idx ON orders (external_id) WHERE external_id IS NOT NULL;

    ALTER TABLE inbound_webhooks ALTER COLUMN raw_body DROP NOT NULL;
    ALTER TABLE inbound_webhooks ADD COLUMN payload_purged_at timestamptz;
    CREATE INDEX inbound_webhooks_status_idx ON inbound_webhooks (status, id DESC);
    CREATE INDEX inbound_webhooks_topic_idx ON inbound_webhooks (topic, id DESC);
    CREATE INDEX inbound_webhooks_order_idx ON inbound_webhooks (order_id) WHERE order_id IS NOT NULL;
    CREATE INDEX inbound_webhooks_purge_idx ON inbound_webhooks (processed_at)
      WHERE status = 'processed' AND raw_body IS NOT NULL;

    CREATE INDEX webhook_messages_order_idx ON webhook_messages (order_id, id) WHERE order_id IS NOT NULL;
    CREATE INDEX webhook_messages_undelivered_idx ON webhook_messages (created_at) WHERE status IN ('held', 'queued');
    CREATE INDEX webhook_messages_settled_idx ON webhook_messages (settled_at) WHERE status IN ('delivered', 'failed');

    CREATE TABLE job_links (
      job_id uuid PRIMARY KEY,
      queue text NOT NULL,
      order_id integer,
      inbound_webhook_id integer,
      message_row_id integer,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX job_links_order_idx ON job_links (order_id) WHERE order_id IS NOT NULL;
    CREATE INDEX job_links_inbound_idx ON job_links (inbound_webhook_id) WHERE inbound_webhook_id IS NOT NULL;
    CREATE INDEX job_links_message_idx ON job_links (message_row_id) WHERE message_row_id IS NOT NULL;
    CREATE INDEX job_links_created_idx ON job_links (created_at);

    CREATE TABLE purged_job_counts (
      queue text PRIMARY KEY,
      failed bigint NOT NULL DEFAULT 0
    );
  `);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    DROP TABLE purged_job_counts;
    DROP TABLE job_links;
    DROP INDEX webhook_messages_settled_idx;
    DROP INDEX webhook_messages_undelivered_idx;
    DROP INDEX webhook_messages_order_idx;
    DROP INDEX inbound_webhooks_purge_idx;
    DROP INDEX inbound_webhooks_order_idx;
    DROP INDEX inbound_webhooks_topic_idx;
    DROP INDEX inbound_webhooks_status_idx;
    ALTER TABLE inbound_webhooks DROP COLUMN payload_purged_at;
    DROP INDEX orders_external_id_idx;
    DROP INDEX orders_platform_created_idx;
    DROP INDEX orders_status_created_idx;
    DROP INDEX orders_created_idx;
    ALTER TABLE order_events DROP COLUMN details;
    ALTER TABLE order_events DROP COLUMN reason;
  `);
}
