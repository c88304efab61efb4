import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import { fetchNextJob } from 'pg-boss/dist/plans.js';
import { FETCH_REPLAN_AFTER, JobFetchPreparingClient } from '../../src/db/prepared.ts';
import { buildTestApp, waitFor } from '../helpers/app.ts';

const onServer = Boolean(process.env.TEST_DATABASE_URL);

/** The statements the session of one pooled connection has prepared, after `work` ran on it. */
async function preparedAfter(app: FastifyInstance, work: (conn: typeof app.ctx.db) => Promise<unknown>): Promise<string[]> {
  return app.ctx.db.connection().execute(async (conn) => {
    await work(conn);
    const { rows } = await sql<{ statement: string }>`SELECT statement FROM pg_prepared_statements`.execute(conn);
    return rows.map((r) => r.statement);
  });
}

describe('named prepared statements (PostgreSQL)', { skip: !onServer && 'needs TEST_DATABASE_URL' }, () => {
  it('data statements with parameters are prepared once per connection and answer as before', async (t) => {
    const app = await buildTestApp(t);
    const statements = await preparedAfter(app, async (conn) => {
      for (let i = 0; i < 3; i++) {
        const rows = await conn.selectFrom('users').select('email').where('id', '=', -1).execute();
        assert.deepEqual(rows, []);
      }
    });
    const mine = statements.filter((s) => s.includes('from "users" where "id" = $1'));
    assert.equal(mine.length, 1, JSON.stringify(statements));
    // transaction control and statements without parameters stay unnamed
    assert.ok(!statements.some((s) => /^\s*(begin|commit|select statement)/i.test(s)), JSON.stringify(statements));
  });

  it('after a migration changes a table, a stale statement fails once and the connection prepares afresh', async (t) => {
    const app = await buildTestApp(t);
    await app.ctx.db.connection().execute(async (conn) => {
      await sql`CREATE TABLE prep_probe (id int)`.execute(conn);
      await sql`INSERT INTO prep_probe VALUES (1)`.execute(conn);
      const read = () => sql<Record<string, unknown>>`SELECT * FROM prep_probe WHERE id > ${0}`.execute(conn);
      assert.deepEqual((await read()).rows, [{ id: 1 }]);
      await sql`ALTER TABLE prep_probe ADD COLUMN note text`.execute(conn);
      await assert.rejects(read(), (err: { code?: string }) => err.code === '0A000');
      assert.deepEqual((await read()).rows, [{ id: 1, note: null }]);
    });
  });

  it("pg-boss's own pool prepares its job fetches only: a fetch once per connection, the rest unnamed", async (t) => {
    const app = await buildTestApp(t);
    const { pool } = app.ctx.queue.boss.getDb() as unknown as { pool: pg.Pool };
    // a job sent and completed: the worker fetched it (and keeps polling every queue) on this pool
    const id = await app.ctx.queue.sendNow('jobs-purge', {});
    assert.ok(id);
    await waitFor(async () => ((await app.ctx.queue.boss.getJobById('jobs-purge', id))?.state === 'completed' ? true : undefined));
    // every connection of the pool, held at once, so each one's session is read
    const clients = await Promise.all(Array.from({ length: pool.totalCount }, () => pool.connect()));
    try {
      const statements = (await Promise.all(clients.map(async (c) => (await c.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements')).rows))).flat().map((r) => r.statement);
      assert.ok(statements.some((s) => s.includes("name = 'jobs-purge'")), 'the fetch of the purge queue is prepared');
      assert.ok(statements.every((s) => /^\s*WITH\s+next\s+AS/.test(s)), `only fetches are prepared: ${JSON.stringify(statements.map((s) => s.slice(0, 60)))}`);
      for (const c of clients) {
        const texts = (await c.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements')).rows.map((r) => r.statement);
        assert.equal(new Set(texts).size, texts.length, 'each fetch prepared once per connection');
      }
    } finally {
      for (const c of clients) c.release();
    }
  });

  it('a prepared job fetch is planned afresh every FETCH_REPLAN_AFTER executions, so its plan follows the job table', async (t) => {
    const app = await buildTestApp(t);
    const fetching = new JobFetchPreparingClient({ connectionString: app.ctx.config.databaseUrl });
    // the app's teardown drops the database, and with it this connection
    fetching.on('error', () => {});
    await fetching.connect();
    t.after(() => fetching.end());
    const client = fetching as unknown as pg.Client;
    // a queue the test app never sends to, so the fetch claims nothing
    const queue = 'user-email-changed';
    const fetch = fetchNextJob({ schema: 'pgboss', table: 'job_common', name: queue, policy: 'standard', limit: 25, includeMetadata: true, ignoreSingletons: null });
    const run = async () => assert.deepEqual((await client.query(fetch.text, fetch.values)).rows, []);
    const prepared = async () => (await client.query<{ name: string }>('SELECT name FROM pg_prepared_statements ORDER BY name')).rows.map((r) => r.name);
    const plan = async (name: string) => (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (COSTS OFF) EXECUTE ${name}`)).rows.map((r) => r['QUERY PLAN']).join('\n');

    await run();
    const [first] = await prepared();
    assert.match(first, /_p0$/);
    // planned on the empty queue: the UPDATE walks the queue's every job and matches it to the claimed ids
    const onEmpty = await plan(first);
    assert.match(onEmpty, /Join Filter: \(j\.id = next\.id\)/, onEmpty);

    await client.query(`INSERT INTO pgboss.job (name, state, completed_on) SELECT $1, 'completed', now() FROM generate_series(1, 20000)`, [queue]);
    for (let i = 1; i < FETCH_REPLAN_AFTER; i++) await run();
    assert.deepEqual(await prepared(), [first], 'the first plan serves its FETCH_REPLAN_AFTER executions');
    assert.equal(await plan(first), onEmpty, 'and stays as it was made');

    await run();
    const names = await prepared();
    assert.deepEqual(names, [first.replace(/_p0$/, '_p1')], 'prepared afresh under a new name, the old statement deallocated');
    // planned on 20,000 jobs: each claimed id is looked up by the primary key
    const onFull = await plan(names[0]);
    assert.match(onFull, /Index Cond: \(\(name = 'user-email-changed'::text\) AND \(id = next\.id\)\)/, onFull);
  });

  it('DATABASE_PREPARED_STATEMENTS=false sends every statement unnamed', async (t) => {
    const app = await buildTestApp(t, { databasePreparedStatements: false });
    const statements = await preparedAfter(app, (conn) => conn.selectFrom('users').select('email').where('id', '=', -1).execute());
    assert.deepEqual(statements, []);
  });
});
