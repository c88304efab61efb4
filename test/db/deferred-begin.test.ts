import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { sql, type Kysely } from 'kysely';
import pg from 'pg';
import { buildTestApp, defer } from '../helpers/app.ts';
import { createDatabase } from '../../src/db/database.ts';
import type { Database } from '../../src/db/schema.ts';
import { THEN_COMMIT } from '../../src/db/prepared.ts';

const onServer = Boolean(process.env.TEST_DATABASE_URL);

/**
 * A database handle of one pooled connection on a fresh test database, and the statement texts that
 * connection's client hands to pg (each one a round trip), in order.
 */
async function oneConnection(t: TestContext): Promise<{ db: Kysely<Database>; sent: string[]; url: string | undefined }> {
  const app = await buildTestApp(t);
  const handle = await createDatabase({ databaseUrl: app.ctx.config.databaseUrl, dataDir: '', poolSize: 1 });
  defer(t, () => handle.close());
  const sent: string[] = [];
  // the pool's one connection, known by its backend's process id (the app's own pools share pg.Client)
  const { rows } = await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(handle.db);
  const pid = rows[0].pid;
  const original = pg.Client.prototype.query;
  t.after(() => {
    pg.Client.prototype.query = original;
  });
  pg.Client.prototype.query = function (this: pg.Client & { processID: number }, ...args: unknown[]) {
    if (this.processID === pid) {
      const first = args[0] as string | { text: string };
      sent.push(typeof first === 'string' ? first : first.text);
    }
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original;
  await sql`CREATE TABLE begin_probe (id integer PRIMARY KEY, note text)`.execute(handle.db);
  sent.length = 0;
  return { db: handle.db, sent, url: app.ctx.config.databaseUrl };
}

const insert = (db: Kysely<Database>, id: number) => sql`INSERT INTO begin_probe (id, note) VALUES (${id}, ${'n'})`.execute(db);
const ids = async (db: Kysely<Database>) => (await sql<{ id: number }>`SELECT id FROM begin_probe WHERE id > ${0} ORDER BY id`.execute(db)).rows.map((r) => r.id);
const INSERT_TEXT = 'INSERT INTO begin_probe (id, note) VALUES ($1, $2)';

describe("a transaction's BEGIN travels with its first statement (PostgreSQL)", { skip: !onServer && 'needs TEST_DATABASE_URL' }, () => {
  it('a statement prepared on the connection already: no BEGIN round trip, and the statement is inside the transaction', async (t) => {
    const { db, sent } = await oneConnection(t);
    await insert(db, 1); // prepares the insert on the connection
    sent.length = 0;
    await assert.rejects(
      db.transaction().execute(async (trx) => {
        await insert(trx, 2);
        throw new Error('roll back');
      }),
      /roll back/,
    );
    assert.deepEqual(sent, [INSERT_TEXT, 'rollback']);
    // rolled back: had the insert run outside a transaction, row 2 would be there
    assert.deepEqual(await ids(db), [1]);

    sent.length = 0;
    await db.transaction().execute((trx) => insert(trx, 3));
    assert.deepEqual(sent, [INSERT_TEXT, 'commit']);
    assert.deepEqual(await ids(db), [1, 3]);
  });

  it('a statement not yet prepared on the connection: BEGIN goes first on its own', async (t) => {
    const { db, sent } = await oneConnection(t);
    await assert.rejects(
      db.transaction().execute(async (trx) => {
        await insert(trx, 1);
        throw new Error('roll back');
      }),
    );
    assert.deepEqual(sent, ['begin', INSERT_TEXT, 'rollback']);
    assert.deepEqual(await ids(db), []);
  });

  it('a transaction that sends no statement sends nothing', async (t) => {
    const { db, sent } = await oneConnection(t);
    await db.transaction().execute(async () => {});
    await assert.rejects(
      db.transaction().execute(async () => {
        throw new Error('nothing sent');
      }),
    );
    assert.deepEqual(sent, []);
  });

  it('the first statement failing: its error, the transaction rolled back, the connection as good as before', async (t) => {
    const { db, sent } = await oneConnection(t);
    await insert(db, 1);
    sent.length = 0;
    await assert.rejects(
      db.transaction().execute(async (trx) => {
        await insert(trx, 1); // duplicate key
      }),
      (err: { code?: string }) => err.code === '23505',
    );
    assert.deepEqual(sent, [INSERT_TEXT, 'rollback']);
    // the next transaction on the same connection, with the same held-back BEGIN, commits
    await db.transaction().execute(async (trx) => {
      await insert(trx, 2);
      await insert(trx, 3);
    });
    assert.deepEqual(await ids(db), [1, 2, 3]);
  });

  it('statements in and after a transaction see what it committed, and autocommit statements stay outside any', async (t) => {
    const { db } = await oneConnection(t);
    await insert(db, 1);
    await db.transaction().execute(async (trx) => {
      await insert(trx, 2);
      // one transaction: both statements see the same transaction id
      const a = await sql<{ x: string }>`SELECT txid_current()::text AS x WHERE ${1} = 1`.execute(trx);
      const b = await sql<{ x: string }>`SELECT txid_current()::text AS x WHERE ${2} = 2`.execute(trx);
      assert.equal(a.rows[0].x, b.rows[0].x);
    });
    // outside a transaction the same prepared statement gets a new transaction id each time
    const c = await sql<{ x: string }>`SELECT txid_current()::text AS x WHERE ${1} = 1`.execute(db);
    const d = await sql<{ x: string }>`SELECT txid_current()::text AS x WHERE ${1} = 1`.execute(db);
    assert.notEqual(c.rows[0].x, d.rows[0].x);
    assert.deepEqual(await ids(db), [1, 2]);
  });
});

const insertLast = (db: Kysely<Database>, id: number) => sql`INSERT INTO begin_probe (id, note) VALUES (${id}, ${'n'})${sql.raw(THEN_COMMIT)}`.execute(db);
const INSERT_LAST_TEXT = INSERT_TEXT + THEN_COMMIT;

describe("a transaction's COMMIT travels with its last statement (PostgreSQL, THEN_COMMIT)", { skip: !onServer && 'needs TEST_DATABASE_URL' }, () => {
  it('commits with the statement: visible to another connection before the transaction returns, and no COMMIT round trip', async (t) => {
    const { db, sent, url } = await oneConnection(t);
    const other = await createDatabase({ databaseUrl: url, dataDir: '', poolSize: 1 });
    defer(t, () => other.close());
    await insert(db, 1);
    await db.transaction().execute(async (trx) => {
      await insert(trx, 2);
      await insertLast(trx, 3);
      // committed already: another connection sees both rows while this callback still runs
      const seen = await sql<{ id: number }>`SELECT id FROM begin_probe WHERE id > ${1} ORDER BY id`.execute(other.db);
      assert.deepEqual(seen.rows.map((r) => r.id), [2, 3]);
    });
    // BEGIN rode with the first insert, the marked insert's Parse and COMMIT with it; Kysely's COMMIT is answered here
    assert.deepEqual(sent, [INSERT_TEXT, INSERT_TEXT, INSERT_LAST_TEXT]);
    assert.deepEqual(await ids(db), [1, 2, 3]);

    // prepared now, and the transaction's only statement: BEGIN, the statement and COMMIT in one round trip
    sent.length = 0;
    await db.transaction().execute((trx) => insertLast(trx, 4));
    assert.deepEqual(sent, [INSERT_LAST_TEXT]);
    assert.deepEqual(await ids(db), [1, 2, 3, 4]);
  });

  it('a failing last statement commits nothing: the transaction rolls back, and the connection is as good as before', async (t) => {
    const { db, sent } = await oneConnection(t);
    await insertLast(db, 1); // outside a transaction: a plain statement, which prepares it
    await assert.rejects(
      db.transaction().execute(async (trx) => {
        await insert(trx, 2);
        await insertLast(trx, 1); // duplicate key: the COMMIT behind it is skipped
      }),
      (err: { code?: string }) => err.code === '23505',
    );
    assert.equal(sent.at(-1), 'rollback');
    assert.deepEqual(await ids(db), [1]);
    await db.transaction().execute(async (trx) => {
      await insert(trx, 5);
      await insertLast(trx, 6);
    });
    assert.deepEqual(await ids(db), [1, 5, 6]);
  });

  it('no statement runs after the one that committed, and a later throw cannot undo it', async (t) => {
    const { db } = await oneConnection(t);
    await insertLast(db, 1);
    await assert.rejects(
      db.transaction().execute(async (trx) => {
        await insertLast(trx, 2);
        await insert(trx, 3);
      }),
      /committed by its last statement/,
    );
    assert.deepEqual(await ids(db), [1, 2]);
    // the connection runs transactions as before
    await db.transaction().execute((trx) => insert(trx, 4));
    assert.deepEqual(await ids(db), [1, 2, 4]);
  });
});

describe('THEN_COMMIT on any database: the statement runs, and Kysely commits', () => {
  it('commits once, with the statement inside the transaction', async (t) => {
    const app = await buildTestApp(t);
    const { db } = app.ctx;
    await sql`CREATE TABLE commit_probe (id integer PRIMARY KEY)`.execute(db);
    await db.transaction().execute(async (trx) => {
      await sql`INSERT INTO commit_probe (id) VALUES (${1})`.execute(trx);
      await sql`INSERT INTO commit_probe (id) VALUES (${2})${sql.raw(THEN_COMMIT)}`.execute(trx);
    });
    await assert.rejects(
      db.transaction().execute(async (trx) => {
        await sql`INSERT INTO commit_probe (id) VALUES (${3})`.execute(trx);
        await sql`INSERT INTO commit_probe (id) VALUES (${1})${sql.raw(THEN_COMMIT)}`.execute(trx);
      }),
    );
    const { rows } = await sql<{ id: number }>`SELECT id FROM commit_probe ORDER BY id`.execute(db);
    assert.deepEqual(rows.map((r) => r.id), [1, 2]);
  });
});
