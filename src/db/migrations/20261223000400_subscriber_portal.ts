import type { Kysely } from 'kysely';
import { runDdl } from '../ddl.ts';

/**
 * The subscriber portal (issue 55, decision 145): a subscription's messages newest first, also by
 * event type or state, and its attempts counted per hour or day by outcome — each read an index serves.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    CREATE INDEX webhook_messages_subscription_idx ON webhook_messages (subscription_id, id);
    CREATE INDEX webhook_messages_subscription_type_idx ON webhook_messages (subscription_id, event_type, id);
    CREATE INDEX webhook_messages_subscription_status_idx ON webhook_messages (subscription_id, status, id);
    CREATE INDEX webhook_deliveries_subscription_time_idx ON webhook_deliveries (subscription_id, created_at) INCLUDE (success);
  `);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    DROP INDEX webhook_deliveries_subscription_time_idx;
    DROP INDEX webhook_messages_subscription_status_idx;
    DROP INDEX webhook_messages_subscription_type_idx;
    DROP INDEX webhook_messages_subscription_idx;
  `);
}
