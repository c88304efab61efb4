import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { summarizeQuery } from '../../src/telemetry-query-summary.ts';

/** The names of PostgreSQL spans (src/telemetry.ts): OpenTelemetry's `db.query.summary` of each statement. */
describe('database span names: the query summary of a statement', () => {
  const cases: [string, string][] = [
    // Kysely's quoting: `"orders"` is the table orders
    ['select "id", "status" from "orders" where "id" = $1', 'SELECT orders'],
    ['insert into "order_events" ("order_id", "status") values ($1, $2) returning *', 'INSERT order_events'],
    ['update "webhook_messages" set "status" = $1 where "id" = $2 and "status" in ($3, $4)', 'UPDATE webhook_messages'],
    ['delete from "webhook_deliveries" where "id" = $1', 'DELETE webhook_deliveries'],
    // joins and lists, with aliases; row locks are no operation
    [
      'select "m".* from "webhook_messages" as "m" inner join "webhook_subscriptions" as "s" on "s"."id" = "m"."subscription_id" for update',
      'SELECT webhook_messages webhook_subscriptions',
    ],
    ['SELECT * FROM pgboss.job j, pgboss.queue q WHERE j.name = q.name FOR NO KEY UPDATE SKIP LOCKED', 'SELECT pgboss.job pgboss.queue'],
    // the convention's examples
    ['INSERT INTO shipping_details (order_id, address) SELECT order_id, address FROM orders WHERE order_id = ?', 'INSERT shipping_details SELECT orders'],
    ['SELECT order_date FROM (SELECT * FROM orders o JOIN customers c ON o.customer_id = c.customer_id)', 'SELECT SELECT orders customers'],
    // a function's FROM, a literal, a comment and an upsert's DO UPDATE name nothing
    ["SELECT extract(epoch FROM now() - min(created_at)) AS age FROM webhook_messages WHERE status IN ('held', 'from x') -- FROM y", 'SELECT webhook_messages'],
    ['insert into "items" ("sku") values ($1) on conflict ("sku") do update set "sku" = excluded."sku"', 'INSERT items'],
    // common table expressions are not tables; what they do is
    [
      `WITH doomed AS (SELECT id FROM webhook_messages LIMIT $1 FOR UPDATE SKIP LOCKED),
       gone AS (DELETE FROM webhook_messages w USING doomed d WHERE w.id = d.id RETURNING 1)
       SELECT count(*) FROM gone`,
      'SELECT webhook_messages DELETE webhook_messages SELECT',
    ],
    ['SELECT pg_advisory_xact_lock($1::int, $2::int)', 'SELECT'],
    ['select "x" from "Weird Table"', 'SELECT "Weird Table"'],
    ['BEGIN', 'BEGIN'],
    ['commit', 'COMMIT'],
    ['LOCK TABLE orders IN SHARE MODE', 'LOCK orders'],
  ];
  for (const [sql, summary] of cases) {
    it(summary, () => assert.equal(summarizeQuery(sql), summary));
  }

  it('at most 255 characters, cut between words', () => {
    const sql = Array.from({ length: 60 }, (_, i) => `SELECT * FROM table_number_${i}`).join(' UNION ALL ');
    const s = summarizeQuery(sql)!;
    assert.ok(s.length <= 255 && s.length > 200, s);
    assert.ok(s.endsWith('SELECT') || /table_number_\d+$/.test(s), s);
  });

  it('nothing to summarise: undefined', () => {
    assert.equal(summarizeQuery('   '), undefined);
    assert.equal(summarizeQuery('-- only a comment'), undefined);
  });
});
