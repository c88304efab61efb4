import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
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
