import { sql, type Kysely } from 'kysely';

/**
 * The order counters (`order_counts`, `user_order_counts`, `order_transition_counts`) are brought up
 * to date when the changing transaction commits, by deferred constraint triggers, one per changed
 * row. A transaction then holds a counter row's lock only while it commits: a request placing an
 * order no longer holds its status's counter rows while it sends the order's job, and a worker's
 * batch no longer holds them while its listeners act, so neither waits for the other in between.
 * The counts a transaction changed are visible to others only once it commits, as before; a
 * transaction does not read its own changes in the counters.
 *
 * Deletes keep their statement-level triggers (they are rare, and happen in bulk). The triggers are
 * swapped in this migration's transaction, which holds writes to the tables back until it ends, so
 * no change is counted twice or missed.
 */
const SLOTS = 16;

const INSERTED = `
  BEGIN
    INSERT INTO order_counts AS c (status, platform, slot, total)
    VALUES (NEW.status, NEW.source <> 'api', (NEW.id % ${SLOTS})::smallint, 1)
    ON CONFLICT (status, platform, slot) DO UPDATE SET total = c.total + 1;
    INSERT INTO user_order_counts AS c (user_id, status, total)
    VALUES (NEW.user_id, NEW.status, 1)
    ON CONFLICT (user_id, status) DO UPDATE SET total = c.total + 1;
    RETURN NULL;
  END`;

/** The row-level triggers of 20261202000000 whose functions the deferred ones run as they are. */
const ROW_LEVEL = [
  ['order_status_counters', 'orders', 'UPDATE OF status', 'WHEN (OLD.status IS DISTINCT FROM NEW.status)', 'order_status_counters_row'],
  ['order_transition_counters', 'order_events', 'INSERT', '', 'order_transition_counters_row'],
] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER order_counts_insert ON orders`.execute(db);
  await sql`DROP TRIGGER user_order_counts_insert ON orders`.execute(db);
  await sql.raw(`CREATE FUNCTION order_counters_insert_row() RETURNS trigger LANGUAGE plpgsql AS $$ ${INSERTED} $$`).execute(db);
  await sql`CREATE CONSTRAINT TRIGGER order_counters_insert AFTER INSERT ON orders DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION order_counters_insert_row()`.execute(db);
  for (const [name, table, event, when, fn] of ROW_LEVEL) {
    await sql.raw(`DROP TRIGGER ${name} ON ${table}`).execute(db);
    await sql.raw(`CREATE CONSTRAINT TRIGGER ${name} AFTER ${event} ON ${table} DEFERRABLE INITIALLY DEFERRED FOR EACH ROW ${when} EXECUTE FUNCTION ${fn}()`).execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const [name, table, event, when, fn] of ROW_LEVEL) {
    await sql.raw(`DROP TRIGGER ${name} ON ${table}`).execute(db);
    await sql.raw(`CREATE TRIGGER ${name} AFTER ${event} ON ${table} FOR EACH ROW ${when} EXECUTE FUNCTION ${fn}()`).execute(db);
  }
  await sql`DROP TRIGGER order_counters_insert ON orders`.execute(db);
  await sql`DROP FUNCTION order_counters_insert_row()`.execute(db);
  await sql`CREATE TRIGGER order_counts_insert AFTER INSERT ON orders REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION order_counts_maintain()`.execute(db);
  await sql`CREATE TRIGGER user_order_counts_insert AFTER INSERT ON orders REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION user_order_counts_maintain()`.execute(db);
}
