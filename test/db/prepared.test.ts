import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
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

  it('DATABASE_PREPARED_STATEMENTS=false sends every statement unnamed', async (t) => {
    const app = await buildTestApp(t, { databasePreparedStatements: false });
    const statements = await preparedAfter(app, (conn) => conn.selectFrom('users').select('email').where('id', '=', -1).execute());
    assert.deepEqual(statements, []);
  });
});
