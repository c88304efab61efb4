import { sql, type Kysely } from 'kysely';

/**
 * No trigger keeps a counter any more (decision 011): the totals of the lists are counted where
 * they are read, through an index, and the metrics count in the process that changes a status.
 * The one trigger left on the service's tables is `users_notify_changed` (docs/architecture.md).
 *
 * `orders_open_idx` serves the open-orders gauge: a count of the pending and processing orders
 * reads this index only, however many final orders there are.
 *
 * There is no way down: the counters' triggers and tables are those of seven earlier migrations.
 */
const TRIGGERS = [
  ['order_counters_insert', 'orders'],
  ['order_status_counters', 'orders'],
  ['order_counts_delete', 'orders'],
  ['user_order_counts_delete', 'orders'],
  ['order_transition_counters', 'order_events'],
  ['users_count_insert', 'users'],
  ['users_count_update', 'users'],
  ['users_count_delete', 'users'],
  ['inbound_webhook_counts_insert', 'inbound_webhooks'],
  ['inbound_webhook_counts_update', 'inbound_webhooks'],
  ['inbound_webhook_counts_delete', 'inbound_webhooks'],
  ['webhook_delivery_counts_insert', 'webhook_deliveries'],
];

const FUNCTIONS = [
  'order_counters_insert_row()',
  'order_status_counters_row()',
  'order_transition_counters_row()',
  'order_counts_maintain()',
  'order_transition_counts_maintain()',
  'user_order_counts_maintain()',
  'users_count_maintain()',
  'inbound_webhook_counts_maintain()',
  'webhook_delivery_counts_maintain()',
  'fold_user_order_counts(integer)',
];

const TABLES = ['order_counts', 'user_order_counts', 'order_transition_counts', 'user_counts', 'inbound_webhook_counts', 'webhook_delivery_counts'];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const [name, table] of TRIGGERS) await sql.raw(`DROP TRIGGER IF EXISTS ${name} ON ${table}`).execute(db);
  for (const fn of FUNCTIONS) await sql.raw(`DROP FUNCTION IF EXISTS ${fn}`).execute(db);
  for (const table of TABLES) await sql.raw(`DROP TABLE IF EXISTS ${table}`).execute(db);
  await sql`CREATE INDEX orders_open_idx ON orders (status) WHERE status IN ('pending', 'processing')`.execute(db);
}
