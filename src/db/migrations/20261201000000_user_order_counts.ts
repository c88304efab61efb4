import { sql, type Kysely } from 'kysely';

/**
 * Each user's orders by current status, kept by a trigger in the transaction of every change, so
 * that the total of `GET /orders` is a read of at most one row per status however many orders the
 * user has, where a count over the user's orders grows with them. The trigger runs once per statement with its transition
 * tables, and an update that changes no status changes no counter row. A user's counter rows are
 * taken in key order. The rows that exist are counted in this migration's transaction, after the
 * trigger is created: the trigger's lock on `orders` holds writes back until both are done.
 */
const DELTAS = (rows: string, sign: '' | '-') => `SELECT user_id, status, ${sign}count(*) AS n FROM ${rows} GROUP BY 1, 2`;

function upsert(deltas: string): string {
  return `
    INSERT INTO user_order_counts AS c (user_id, status, total)
    SELECT user_id, status, sum(n) FROM (${deltas}) d
    GROUP BY 1, 2 HAVING sum(n) <> 0 ORDER BY 1, 2
    ON CONFLICT (user_id, status) DO UPDATE SET total = c.total + excluded.total`;
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE user_order_counts (user_id integer NOT NULL, status text NOT NULL, total bigint NOT NULL, PRIMARY KEY (user_id, status))`.execute(db);
  await sql
    .raw(
      `CREATE FUNCTION user_order_counts_maintain() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN ${upsert(DELTAS('new_rows', ''))};
        ELSIF TG_OP = 'DELETE' THEN ${upsert(DELTAS('old_rows', '-'))};
        ELSE ${upsert(`${DELTAS('new_rows', '')} UNION ALL ${DELTAS('old_rows', '-')}`)};
        END IF;
        RETURN NULL;
      END $$`,
    )
    .execute(db);
  await sql`CREATE TRIGGER user_order_counts_insert AFTER INSERT ON orders REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION user_order_counts_maintain()`.execute(db);
  await sql`CREATE TRIGGER user_order_counts_update AFTER UPDATE ON orders REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION user_order_counts_maintain()`.execute(db);
  await sql`CREATE TRIGGER user_order_counts_delete AFTER DELETE ON orders REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION user_order_counts_maintain()`.execute(db);
  await sql.raw(upsert(DELTAS('orders', ''))).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const op of ['insert', 'update', 'delete']) await sql.raw(`DROP TRIGGER user_order_counts_${op} ON orders`).execute(db);
  await sql`DROP FUNCTION user_order_counts_maintain()`.execute(db);
  await sql`DROP TABLE user_order_counts`.execute(db);
}
