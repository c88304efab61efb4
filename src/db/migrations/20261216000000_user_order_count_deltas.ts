import { sql, type Kysely } from 'kysely';

/**
 * `user_order_counts` takes no row lock any more: every change appends its delta rows, a reader sums
 * a user's rows, and `fold_user_order_counts` folds a user's rows into one per status. An order's
 * counters are brought up to date as its transaction commits, row after row; a worker's batch then
 * took one user's counter rows among the slot rows of `order_counts`, and a request placing an
 * order took them the other way round, so the two could deadlock at commit. `order_counts` and
 * `order_transition_counts` keep their locked rows: keyed by status and slot only, they are taken
 * in an order that a transaction changing one order never crosses.
 *
 * `folded` marks the rows a fold wrote; a partial index finds the users with deltas to fold. The
 * functions are replaced in this migration's transaction, which holds writes to `orders` back
 * until it ends, so no change is counted twice or missed.
 */
const SLOTS = 16;

const INSERTED = `
  BEGIN
    INSERT INTO order_counts AS c (status, platform, slot, total)
    VALUES (NEW.status, NEW.source <> 'api', (NEW.id % ${SLOTS})::smallint, 1)
    ON CONFLICT (status, platform, slot) DO UPDATE SET total = c.total + 1;
    INSERT INTO user_order_counts (user_id, status, total) VALUES (NEW.user_id, NEW.status, 1);
    RETURN NULL;
  END`;

const STATUS_CHANGE = `
  BEGIN
    INSERT INTO order_counts AS c (status, platform, slot, total)
    SELECT * FROM (VALUES
      (OLD.status, OLD.source <> 'api', (OLD.id % ${SLOTS})::smallint, -1::bigint),
      (NEW.status, NEW.source <> 'api', (NEW.id % ${SLOTS})::smallint, 1::bigint)
    ) AS d (status, platform, slot, n)
    ORDER BY 1, 2, 3
    ON CONFLICT (status, platform, slot) DO UPDATE SET total = c.total + excluded.total;
    INSERT INTO user_order_counts (user_id, status, total) VALUES (OLD.user_id, OLD.status, -1), (NEW.user_id, NEW.status, 1);
    RETURN NULL;
  END`;

/** The statement-level function, which counts deletes (and bulk changes, were it attached to them). */
const deltas = (rows: string, sign: '' | '-') => `SELECT user_id, status, ${sign}count(*) AS n FROM ${rows} GROUP BY 1, 2`;
const appended = (rows: string) => `INSERT INTO user_order_counts (user_id, status, total) SELECT user_id, status, sum(n) FROM (${rows}) d GROUP BY 1, 2 HAVING sum(n) <> 0`;
const statementFunction = (write: (rows: string) => string) => `
  BEGIN
    IF TG_OP = 'INSERT' THEN ${write(deltas('new_rows', ''))};
    ELSIF TG_OP = 'DELETE' THEN ${write(deltas('old_rows', '-'))};
    ELSE ${write(`${deltas('new_rows', '')} UNION ALL ${deltas('old_rows', '-')}`)};
    END IF;
    RETURN NULL;
  END`;

/**
 * Folds the rows of at most `max_users` users with deltas into one row per status (none for a
 * total of 0) and returns how many users it folded. Rows committed after the fold's statement
 * began are left for the next fold; two folds at once each sum only the rows they deleted.
 */
const FOLD = `
  WITH users AS (SELECT DISTINCT user_id FROM user_order_counts WHERE NOT folded LIMIT max_users),
  gone AS (DELETE FROM user_order_counts c USING users u WHERE c.user_id = u.user_id RETURNING c.user_id, c.status, c.total),
  kept AS (INSERT INTO user_order_counts (user_id, status, total, folded) SELECT user_id, status, sum(total), true FROM gone GROUP BY 1, 2 HAVING sum(total) <> 0)
  SELECT count(DISTINCT user_id)::integer FROM gone`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`LOCK TABLE orders IN SHARE ROW EXCLUSIVE MODE`.execute(db);
  await sql`ALTER TABLE user_order_counts DROP CONSTRAINT user_order_counts_pkey`.execute(db);
  // the rows there are one per user and status already: folded
  await sql`ALTER TABLE user_order_counts ADD COLUMN folded boolean NOT NULL DEFAULT true`.execute(db);
  await sql`ALTER TABLE user_order_counts ALTER COLUMN folded SET DEFAULT false`.execute(db);
  await sql`CREATE INDEX user_order_counts_user ON user_order_counts (user_id, status)`.execute(db);
  await sql`CREATE INDEX user_order_counts_unfolded ON user_order_counts (user_id) WHERE NOT folded`.execute(db);
  await sql.raw(`CREATE OR REPLACE FUNCTION order_counters_insert_row() RETURNS trigger LANGUAGE plpgsql AS $$ ${INSERTED} $$`).execute(db);
  await sql.raw(`CREATE OR REPLACE FUNCTION order_status_counters_row() RETURNS trigger LANGUAGE plpgsql AS $$ ${STATUS_CHANGE} $$`).execute(db);
  await sql.raw(`CREATE OR REPLACE FUNCTION user_order_counts_maintain() RETURNS trigger LANGUAGE plpgsql AS $$ ${statementFunction(appended)} $$`).execute(db);
  await sql.raw(`CREATE FUNCTION fold_user_order_counts(max_users integer) RETURNS integer LANGUAGE sql AS $$ ${FOLD} $$`).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`LOCK TABLE orders IN SHARE ROW EXCLUSIVE MODE`.execute(db);
  await sql`SELECT fold_user_order_counts(2147483647)`.execute(db);
  await sql`DROP FUNCTION fold_user_order_counts(integer)`.execute(db);
  await sql`DROP INDEX user_order_counts_unfolded`.execute(db);
  await sql`DROP INDEX user_order_counts_user`.execute(db);
  await sql`ALTER TABLE user_order_counts DROP COLUMN folded`.execute(db);
  await sql`ALTER TABLE user_order_counts ADD PRIMARY KEY (user_id, status)`.execute(db);
  // the earlier functions, as 20261201000000, 20261202000000 and 20261215000000 created them
  const upsert = (rows: string) => `${appended(rows).replace('HAVING sum(n) <> 0', 'HAVING sum(n) <> 0 ORDER BY 1, 2')} ON CONFLICT (user_id, status) DO UPDATE SET total = user_order_counts.total + excluded.total`;
  const previous = {
    order_counters_insert_row: INSERTED.replace(
      'INSERT INTO user_order_counts (user_id, status, total) VALUES (NEW.user_id, NEW.status, 1);',
      'INSERT INTO user_order_counts AS c (user_id, status, total) VALUES (NEW.user_id, NEW.status, 1) ON CONFLICT (user_id, status) DO UPDATE SET total = c.total + 1;',
    ),
    order_status_counters_row: STATUS_CHANGE.replace(
      'INSERT INTO user_order_counts (user_id, status, total) VALUES (OLD.user_id, OLD.status, -1), (NEW.user_id, NEW.status, 1);',
      `INSERT INTO user_order_counts AS c (user_id, status, total)
       SELECT * FROM (VALUES (OLD.user_id, OLD.status, -1::bigint), (NEW.user_id, NEW.status, 1::bigint)) AS d (user_id, status, n)
       ORDER BY 1, 2 ON CONFLICT (user_id, status) DO UPDATE SET total = c.total + excluded.total;`,
    ),
    user_order_counts_maintain: statementFunction(upsert),
  };
  for (const [name, body] of Object.entries(previous)) {
    await sql.raw(`CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ ${body} $$`).execute(db);
  }
}
