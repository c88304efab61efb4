import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { buildTestApp } from '../helpers/app.ts';

const onServer = Boolean(process.env.TEST_DATABASE_URL);

/** The statements the session of one pooled connection has prepared, after `work` ran on it. */
async function preparedAfter(app: FastifyInstance, work: (conn: typeof app.ctx.db) => Promise<unknown>): Promise<string[]> {
  return app.ctx.db.connection().execute(async (conn) => {
    await work(conn);
    const { rows } = await sql<{ statement: string }>`SELECT statement FROM pg_prepared_statements`.execute(conn);
    return rows.map((r) => r.statement);
  });
}

const readNobody = (conn: FastifyInstance['ctx']['db']) => conn.selectFrom('users').select('email').where('id', '=', -1).execute();

describe('named prepared statements (PostgreSQL)', { skip: !onServer && 'needs TEST_DATABASE_URL' }, () => {
  it('data statements with parameters are prepared once per connection and answer as before', async (t) => {
    const app = await buildTestApp(t);
    const statements = await preparedAfter(app, async (conn) => {
      for (let i = 0; i < 3; i++) assert.deepEqual(await readNobody(conn), []);
    });
    const mine = statements.filter((s) => s.includes('from "users" where "id" = $1'));
    assert.equal(mine.length, 1, JSON.stringify(statements));
    // transaction control and statements without parameters stay unnamed
    assert.ok(!statements.some((s) => /^\s*(begin|commit|select statement)/i.test(s)), JSON.stringify(statements));
  });

  it('after a migration changes a table, a stale statement fails once and its connection is replaced', async (t) => {
    const app = await buildTestApp(t, { databasePoolSize: 1 });
    const read = (db: FastifyInstance['ctx']['db']) => sql<Record<string, unknown>>`SELECT * FROM prep_probe WHERE id > ${0}`.execute(db);
    await sql`CREATE TABLE prep_probe (id int)`.execute(app.ctx.db);
    await sql`INSERT INTO prep_probe VALUES (1)`.execute(app.ctx.db);
    assert.deepEqual((await read(app.ctx.db)).rows, [{ id: 1 }]);
    await sql`ALTER TABLE prep_probe ADD COLUMN note text`.execute(app.ctx.db);
    await assert.rejects(read(app.ctx.db), (err: { code?: string }) => err.code === '0A000');
    // the pool's one connection was closed on release: the next one prepares the statement anew
    assert.deepEqual((await read(app.ctx.db)).rows, [{ id: 1, note: null }]);
  });

  it('DATABASE_PREPARED_STATEMENTS=false sends every statement unnamed', async (t) => {
    const app = await buildTestApp(t, { databasePreparedStatements: false });
    const statements = await preparedAfter(app, async (conn) => assert.deepEqual(await readNobody(conn), []));
    assert.deepEqual(statements, []);
  });
});
