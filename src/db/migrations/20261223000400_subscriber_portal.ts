import type { Kysely } from 'kysely';
import { runDdl } from '../ddl.ts';

/**
 * The subscriber portal (issue 55, decision 145): a subscription's messages newest first, also by
 * event type or state (each index carries the other filter, so both filters together and the
 * capped count read the index alone), and its attempts counted per hour or day by outcome.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    CREATE INDEX webhook_messages_subscription_idx ON webhook_messages (subscription_id, id);
    CREATE INDEX webhook_messages_subscription_type_idx ON webhook_messages (subscription_id, event_type, id) INCLUDE (status);
    CREATE INDEX webhook_messages_subscription_status_idx ON webhook_messages (subscription_id, status, id) INCLUDE (event_type);
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
