import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { createDatabase } from '../../src/db/database.ts';
import { databaseOptions, migrateToLatest } from '../../src/db/migrate.ts';
import { defer, testConfig } from '../helpers/app.ts';

/**
 * The database does what the code says: after the migrations, the service's tables carry one
 * trigger, the users trigger whose NOTIFY keeps every API process's user cache true
 * (docs/architecture.md), and no counter table or function is left (decision 011).
 */
describe('triggers and functions of a freshly migrated database', () => {
  it('only users_notify_changed, on users', async (t) => {
    const config = await testConfig(t, {}, { emptyDatabase: true });
    const database = await createDatabase(databaseOptions(config));
    defer(t, () => database.close());
    // what `npm run migrate` runs
    assert.ok((await migrateToLatest(database.db)).length > 0);

    const { rows: triggers } = await sql<{ table: string; trigger: string }>`
      SELECT c.relname AS table, t.tgname AS trigger
      FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND NOT t.tgisinternal
      ORDER BY 1, 2`.execute(database.db);
    assert.deepEqual(triggers, [{ table: 'users', trigger: 'users_notify_changed' }]);

    const { rows: functions } = await sql<{ name: string }>`
      SELECT p.proname AS name FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = 'public' ORDER BY 1`.execute(database.db);
    assert.deepEqual(functions, [{ name: 'users_notify_changed' }]);

    const { rows: counters } = await sql<{ name: string }>`
      SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE '%count%'`.execute(database.db);
    assert.deepEqual(counters, []);
  });
});
