import { sql, type Kysely } from 'kysely';

/**
 * Counters kept by triggers in the transaction of every change, so that list totals and metrics
 * cost a read of a few dozen rows however large the tables grow (a count over a million orders
 * takes about 100 ms):
 * - `order_counts`: orders by current status and by origin (API or platform);
 * - `order_transition_counts`: order events by the status they moved to (never decremented);
 * - `inbound_webhook_counts`: platform webhooks by current status and topic ('' when it had none);
 * - `webhook_delivery_counts`: outgoing delivery attempts by success (never decremented).
 *
 * Each counter is spread over 16 slots (the row's id, or its order's id, modulo 16), so concurrent
 * transactions on different orders rarely wait for the same counter row; a reader sums the slots.
 * One counter row update per statement (transition tables, like `user_counts`), taken in key order.
 */
interface Counter {
  table: string;
  counter: string;
  /** the counter's key columns and the expression each takes from a changed row */
  keys: { column: string; type: string; expr: string }[];
  /** deletes and updates change the counts too (a current state, not a running total) */
  current: boolean;
}

const SLOTS = 16;

const COUNTERS: Counter[] = [
  {
    table: 'orders',
    counter: 'order_counts',
    keys: [
      { column: 'status', type: 'text', expr: 'status' },
      { column: 'platform', type: 'boolean', expr: "source <> 'api'" },
      { column: 'slot', type: 'smallint', expr: `(id % ${SLOTS})::smallint` },
    ],
    current: true,
  },
  {
    table: 'order_events',
    counter: 'order_transition_counts',
    keys: [
      { column: 'status', type: 'text', expr: 'status' },
      { column: 'slot', type: 'smallint', expr: `(order_id % ${SLOTS})::smallint` },
    ],
    current: false,
  },
  {
    table: 'inbound_webhooks',
    counter: 'inbound_webhook_counts',
    keys: [
      { column: 'status', type: 'text', expr: 'status' },
      { column: 'topic', type: 'text', expr: "coalesce(topic, '')" },
      { column: 'slot', type: 'smallint', expr: `(id % ${SLOTS})::smallint` },
    ],
    current: true,
  },
  {
    table: 'webhook_deliveries',
    counter: 'webhook_delivery_counts',
    keys: [
      { column: 'success', type: 'boolean', expr: 'success' },
      { column: 'slot', type: 'smallint', expr: `(id % ${SLOTS})::smallint` },
    ],
    current: false,
  },
];

function columns(c: Counter): string {
  return c.keys.map((k) => k.column).join(', ');
}

/** `SELECT <keys>, <sign>count(*) AS n FROM <rows> GROUP BY <keys>` */
function grouped(c: Counter, rows: string, sign: '' | '-'): string {
  const keys = c.keys.map((k) => `${k.expr} AS ${k.column}`).join(', ');
  return `SELECT ${keys}, ${sign}count(*) AS n FROM ${rows} GROUP BY ${c.keys.map((_, i) => i + 1).join(', ')}`;
}

/** Adds the (non-zero) sums of `deltas` to the counter, creating counter rows as needed. */
function upsert(c: Counter, deltas: string): string {
  return `
    INSERT INTO ${c.counter} AS c (${columns(c)}, total)
    SELECT ${columns(c)}, sum(n) FROM (${deltas}) d
    GROUP BY ${columns(c)} HAVING sum(n) <> 0 ORDER BY ${columns(c)}
    ON CONFLICT (${columns(c)}) DO UPDATE SET total = c.total + excluded.total`;
}

function triggerFunction(c: Counter): string {
  const onInsert = upsert(c, grouped(c, 'new_rows', ''));
  if (!c.current) return `BEGIN ${onInsert}; RETURN NULL; END`;
  const onDelete = upsert(c, grouped(c, 'old_rows', '-'));
  const onUpdate = upsert(c, `${grouped(c, 'new_rows', '')} UNION ALL ${grouped(c, 'old_rows', '-')}`);
  return `
    BEGIN
      IF TG_OP = 'INSERT' THEN ${onInsert};
      ELSIF TG_OP = 'DELETE' THEN ${onDelete};
      ELSE ${onUpdate};
      END IF;
      RETURN NULL;
    END`;
}

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const c of COUNTERS) {
    const keyColumns = c.keys.map((k) => `${k.column} ${k.type} NOT NULL`).join(', ');
    await sql.raw(`CREATE TABLE ${c.counter} (${keyColumns}, total bigint NOT NULL, PRIMARY KEY (${columns(c)}))`).execute(db);
    await sql.raw(`CREATE FUNCTION ${c.counter}_maintain() RETURNS trigger LANGUAGE plpgsql AS $$ ${triggerFunction(c)} $$`).execute(db);
    await sql
      .raw(`CREATE TRIGGER ${c.counter}_insert AFTER INSERT ON ${c.table} REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${c.counter}_maintain()`)
      .execute(db);
    if (c.current) {
      await sql
        .raw(
          `CREATE TRIGGER ${c.counter}_update AFTER UPDATE ON ${c.table} REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${c.counter}_maintain()`,
        )
        .execute(db);
      await sql
        .raw(`CREATE TRIGGER ${c.counter}_delete AFTER DELETE ON ${c.table} REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ${c.counter}_maintain()`)
        .execute(db);
    }
    // the rows that exist already; the triggers (created first, in this transaction) count the rest
    await sql.raw(upsert(c, grouped(c, c.table, ''))).execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const c of COUNTERS) {
    for (const op of c.current ? ['insert', 'update', 'delete'] : ['insert']) {
      await sql.raw(`DROP TRIGGER ${c.counter}_${op} ON ${c.table}`).execute(db);
    }
    await sql.raw(`DROP FUNCTION ${c.counter}_maintain()`).execute(db);
    await sql.raw(`DROP TABLE ${c.counter}`).execute(db);
  }
}
