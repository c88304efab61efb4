import assert from 'node:assert/strict';
import os from 'node:os';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { buildApp } from '../../src/app.ts';
import { createDatabase } from '../../src/db/database.ts';
import { isStorageFull, StorageFull } from '../../src/db/errors.ts';
import { databaseOptions } from '../../src/db/migrate.ts';
import { StorageState } from '../../src/db/storage.ts';
import { api, createUser, defer, errorBody, testConfig } from '../helpers/app.ts';

/**
 * A full disk at the error layer and the HTTP layer, on whichever database the suite runs on.
 * The disk itself is filled for real in test-reliability/disk-full.test.ts (a tmpfs, root); here
 * the free space of a real directory is judged against a reserve no disk has, and the database
 * raises its own disk_full (SQLSTATE 53100).
 */
describe('a full disk', () => {
  it('is what the database calls disk_full (53100), raised by the database itself, and ENOSPC', async (t) => {
    const config = await testConfig(t);
    const database = await createDatabase(databaseOptions(config));
    defer(t, () => database.close());
    const raised = await sql`DO $$ BEGIN RAISE EXCEPTION 'no room' USING ERRCODE = 'disk_full'; END $$`.execute(database.db).then(
      () => undefined,
      (err: unknown) => err,
    );
    assert.equal((raised as { code?: string }).code, '53100');
    assert.ok(isStorageFull(raised));
    assert.ok(isStorageFull(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' })));
    assert.ok(!isStorageFull(Object.assign(new Error('duplicate key'), { code: '23505' })));

    // a disk_full from the database makes /ready's check fail for a while
    const storage = new StorageState(undefined);
    storage.check();
    storage.noteError(raised);
    assert.throws(() => storage.check(), StorageFull);
  });

  it('refuses writes with 503 STORAGE_FULL and Retry-After, after authentication and validation; reads, /health go on; /ready names the disk', async (t) => {
    const config = await testConfig(t);
    // a real statfs of a real directory, against a reserve larger than any disk
    const database = await createDatabase({ ...databaseOptions(config), storage: new StorageState(os.tmpdir(), Number.MAX_SAFE_INTEGER) });
    defer(t, () => database.close());
    const app = await buildApp(config, { database });
    defer(t, () => app.close());
    const user = await createUser(app, { login: false });

    const write = await api(app, user, { method: 'POST', url: '/api/v1/items', payload: { name: 'lamp', price: 3 } });
    assert.equal(write.statusCode, 503);
    assert.equal(errorBody(write).error_code, 'STORAGE_FULL');
    assert.equal(write.headers['retry-after'], '30');
    const count = await sql<{ n: number }>`SELECT count(*)::int AS n FROM items WHERE user_id = ${user.user.id}`.execute(database.db);
    assert.equal(count.rows[0].n, 0, 'nothing written');

    assert.equal((await api(app, null, { method: 'POST', url: '/api/v1/items', payload: { name: 'lamp', price: 3 } })).statusCode, 401);
    assert.equal((await api(app, user, { method: 'POST', url: '/api/v1/items', payload: { name: 'lamp' } })).statusCode, 422);
    assert.equal((await api(app, user, { method: 'GET', url: '/api/v1/items' })).statusCode, 200);
    assert.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 200);
    const ready = await app.inject({ method: 'GET', url: '/ready' });
    assert.equal(ready.statusCode, 503);
    assert.equal(ready.json<{ checks: Record<string, string> }>().checks.database, 'disk full');
  });
});
