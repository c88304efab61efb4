import { sql, type Kysely } from 'kysely';

/**
 * An order's status changes and its events are counted by row-level triggers; its inserts and
 * deletes stay with the statement-level ones. The service changes one order, and writes one event,
 * per statement, and for one row the transition tables of a statement-level trigger cost more than
 * the counting. Inserts and deletes of orders come in bulk as well (an import, the bench's seeding):
 * there a statement-level trigger updates each counter row once per statement, where a row-level
 * one would leave a dead version of it per row.
 *
 * A status change adds -1 for the old status and +1 for the new one to `order_counts` and
 * `user_order_counts`, each counter's rows in key order and `order_counts` first, as the
 * statement-level functions did; an update that changes no status fires nothing (the trigger's
 * WHEN), and an order's user, origin and id, the counters' other keys, never change. An event adds
 * 1 to `order_transition_counts`. The statement-level functions stay, for `down` and for the
 * inserts and deletes. The triggers are swapped in this migration's transaction,
 * which holds writes to `orders` and `order_events` back until it ends, so no change is counted
 * twice or missed.
 */
const SLOTS = 16;

const STATUS_CHANGE = `
  BEGIN
    INSERT INTO order_counts AS c (status, platform, slot, total)
    SELECT * FROM (VALUES
      (OLD.status, OLD.source <> 'api', (OLD.id % ${SLOTS})::smallint, -1::bigint),
      (NEW.status, NEW.source <> 'api', (NEW.id % ${SLOTS})::smallint, 1::bigint)
    ) AS d (status, platform, slot, n)
    ORDER BY 1, 2, 3
    ON CONFLICT (status, platform, slot) DO UPDATE SET total = c.total + excluded.total;
    INSERT INTO user_order_counts AS c (user_id, status, total)
    SELECT * FROM (VALUES (OLD.user_id, OLD.status, -1::bigint), (NEW.user_id, NEW.status, 1::bigint)) AS d (user_id, status, n)
    ORDER BY 1, 2
    ON CONFLICT (user_id, status) DO UPDATE SET total = c.total + excluded.total;
    RETURN NULL;
  END`;

const EVENT = `
  BEGIN
    INSERT INTO order_transition_counts AS c (status, slot, total)
    VALUES (NEW.status, (NEW.order_id % ${SLOTS})::smallint, 1)
    ON CONFLICT (status, slot) DO UPDATE SET total = c.total + 1;
    RETURN NULL;
  END`;

/** The statement-level triggers replaced, as migrations 20261125000100 and 20261201000000 created them. */
const REPLACED = [
  ['order_counts_update', 'orders', 'UPDATE', 'OLD TABLE AS old_rows NEW TABLE AS new_rows', 'order_counts_maintain'],
  ['user_order_counts_update', 'orders', 'UPDATE', 'OLD TABLE AS old_rows NEW TABLE AS new_rows', 'user_order_counts_maintain'],
  ['order_transition_counts_insert', 'order_events', 'INSERT', 'NEW TABLE AS new_rows', 'order_transition_counts_maintain'],
] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const [name, table] of REPLACED) await sql.raw(`DROP TRIGGER ${name} ON ${table}`).execute(db);
  await sql.raw(`CREATE FUNCTION order_status_counters_row() RETURNS trigger LANGUAGE plpgsql AS $$ ${STATUS_CHANGE} $$`).execute(db);
  await sql.raw(`CREATE FUNCTION order_transition_counters_row() RETURNS trigger LANGUAGE plpgsql AS $$ ${EVENT} $$`).execute(db);
  await sql`CREATE TRIGGER order_status_counters AFTER UPDATE OF status ON orders FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION order_status_counters_row()`.execute(db);
  await sql`CREATE TRIGGER order_transition_counters AFTER INSERT ON order_events FOR EACH ROW EXECUTE FUNCTION order_transition_counters_row()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER order_status_counters ON orders`.execute(db);
  await sql`DROP TRIGGER order_transition_counters ON order_events`.execute(db);
  await sql`DROP FUNCTION order_status_counters_row()`.execute(db);
  await sql`DROP FUNCTION order_transition_counters_row()`.execute(db);
  for (const [name, table, event, referencing, fn] of REPLACED) {
    await sql.raw(`CREATE TRIGGER ${name} AFTER ${event} ON ${table} REFERENCING ${referencing} FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`).execute(db);
  }
}
