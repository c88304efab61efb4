import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { isDatabaseUnavailable } from '../../src/db/errors.ts';
import { buildTestApp } from '../helpers/app.ts';

const onServer = Boolean(process.env.TEST_DATABASE_URL);

describe('DATABASE_POOL_SIZE (PostgreSQL)', { skip: !onServer && 'needs TEST_DATABASE_URL' }, () => {
  it("bounds the service's own connections: statements beyond it wait for one, and all of them answer", async (t) => {
    const app = await buildTestApp(t, { databasePoolSize: 2 });
    const { db } = app.ctx;
    const backends = await Promise.all(
      Array.from({ length: 6 }, () => sql<{ pid: number }>`SELECT pg_backend_pid() AS pid, pg_sleep(${0.1})`.execute(db)),
    );
    const pids = new Set(backends.map((r) => r.rows[0].pid));
    assert.equal(pids.size, 2, `backends used: ${[...pids].join(', ')}`);
  });
});

describe('statement timeout (PostgreSQL)', { skip: !onServer && 'needs TEST_DATABASE_URL' }, () => {
  it("is the server's, 15 s on every connection of the service's pool, and a statement it cancels counts as the database unavailable (503, not 500)", async (t) => {
    const app = await buildTestApp(t, { databasePoolSize: 2 });
    const { db } = app.ctx;
    const settings = await Promise.all(Array.from({ length: 2 }, () => sql<{ statement_timeout: string }>`SHOW statement_timeout`.execute(db)));
    assert.deepEqual(settings.map((r) => r.rows[0].statement_timeout), ['15s', '15s']);
    // the same cancellation, sooner: SET LOCAL ends with the transaction, so the pooled connection keeps its 15 s
    const err = await db
      .transaction()
      .execute(async (trx) => {
        await sql`SET LOCAL statement_timeout = 50`.execute(trx);
        await sql`SELECT pg_sleep(1)`.execute(trx);
      })
      .then(() => undefined, (e: unknown) => e as { code?: string });
    assert.equal(err?.code, '57014');
    assert.equal(isDatabaseUnavailable(err), true);
    const after = await sql<{ statement_timeout: string }>`SHOW statement_timeout`.execute(db);
    assert.equal(after.rows[0].statement_timeout, '15s');
  });
});
