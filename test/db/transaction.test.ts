import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { createDatabase } from '../../src/db/database.ts';
import { inTransaction } from '../../src/db/transaction.ts';
import { testConfig } from '../helpers/app.ts';

describe('inTransaction', () => {
  it('runs a deadlock victim again, so both of two transactions that lock two rows in opposite orders commit', { skip: !process.env.TEST_DATABASE_URL && 'needs PostgreSQL (TEST_DATABASE_URL): PGlite runs one transaction at a time' }, async (t) => {
    const config = await testConfig(t);
    const database = await createDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 4 });
    t.after(() => database.close());
    const { db } = database;
    await sql`CREATE TABLE deadlock_probe (id int PRIMARY KEY, n int NOT NULL)`.execute(db);
    await sql`INSERT INTO deadlock_probe VALUES (1, 0), (2, 0)`.execute(db);
    // each first attempt takes its first row, then waits until the other has taken its own
    let taken = 0;
    const bothTaken = Promise.withResolvers<void>();
    const attempts = { first: 0, second: 0 };
    const run = (name: 'first' | 'second', a: number, b: number) =>
      inTransaction(db, async (trx) => {
        attempts[name]++;
        await sql`UPDATE deadlock_probe SET n = n + 1 WHERE id = ${a}`.execute(trx);
        if (attempts[name] === 1) {
          if (++taken === 2) bothTaken.resolve();
          await bothTaken.promise;
        }
        await sql`UPDATE deadlock_probe SET n = n + 1 WHERE id = ${b}`.execute(trx);
      });
    await Promise.all([run('first', 1, 2), run('second', 2, 1)]);
    const { rows } = await sql<{ n: number }>`SELECT n FROM deadlock_probe ORDER BY id`.execute(db);
    assert.deepEqual(rows.map((r) => r.n), [2, 2]);
    // PostgreSQL ended exactly one of them, which ran again
    assert.equal(attempts.first + attempts.second, 3);
  });

  it('does not run again what failed for another reason', async (t) => {
    const config = await testConfig(t);
    const database = await createDatabase({ databaseUrl: config.databaseUrl ?? ':memory:', dataDir: config.dataDir, poolSize: 2 });
    t.after(() => database.close());
    let attempts = 0;
    await assert.rejects(
      inTransaction(database.db, async (trx) => {
        attempts++;
        await sql`SELECT 1 / 0`.execute(trx);
      }),
      (err: { code?: string }) => err.code === '22012',
    );
    assert.equal(attempts, 1);
  });
});
