import type { Kysely } from 'kysely';
import { runDdl } from '../ddl.ts';

// One row per (event, subscription): the message that is delivered, its state and its stable id.
// Messages of one order to one subscription are released one at a time ('held' → 'queued'), so a
// receiver gets an order's status changes in sequence.
export async function up(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    CREATE TABLE webhook_messages (
      id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      message_id text NOT NULL UNIQUE,
      subscription_id integer NOT NULL REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
      event_id integer REFERENCES order_events (id) ON DELETE SET NULL,
      order_id integer,
      event_type text NOT NULL,
      payload text NOT NULL,
      status text NOT NULL CHECK (status IN ('held', 'queued', 'delivered', 'failed')),
      attempts integer NOT NULL DEFAULT 0,
      last_error text,
      created_at timestamptz NOT NULL DEFAULT now(),
      settled_at timestamptz
    );
    CREATE INDEX webhook_messages_pending_idx ON webhook_messages (subscription_id, order_id, id)
      WHERE status IN ('held', 'queued');
    CREATE INDEX webhook_deliveries_message_idx ON webhook_deliveries (message_id);
  `);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    DROP INDEX webhook_deliveries_message_idx;
    DROP TABLE webhook_messages;
  `);
}
