import type { Kysely } from 'kysely';
import { runDdl } from '../ddl.ts';

/**
 * The administrators' overview and order search (issue 55, decision 142):
 * - `orders_created_idx` carries each order's status and total, so the orders and revenue per
 *   hour or day are counted from the index alone (it replaces the index of the same keys);
 * - platform webhooks and delivery attempts by time, with the outcome the overview counts;
 * - the customers' e-mail and name by prefix, in any case, for the order search.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    CREATE INDEX orders_created_stats_idx ON orders (created_at DESC, id DESC) INCLUDE (status, total_amount);
    DROP INDEX orders_created_idx;
    ALTER INDEX orders_created_stats_idx RENAME TO orders_created_idx;
    CREATE INDEX inbound_webhooks_received_idx ON inbound_webhooks (received_at) INCLUDE (status);
    CREATE INDEX webhook_deliveries_created_idx ON webhook_deliveries (created_at) INCLUDE (success);
    CREATE INDEX users_email_prefix_idx ON users (lower(email) text_pattern_ops);
    CREATE INDEX users_name_prefix_idx ON users (lower(full_name) text_pattern_ops);
  `);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    DROP INDEX users_name_prefix_idx;
    DROP INDEX users_email_prefix_idx;
    DROP INDEX webhook_deliveries_created_idx;
    DROP INDEX inbound_webhooks_received_idx;
    CREATE INDEX orders_created_plain_idx ON orders (created_at DESC, id DESC);
    DROP INDEX orders_created_idx;
    ALTER INDEX orders_created_plain_idx RENAME TO orders_created_idx;
  `);
}
