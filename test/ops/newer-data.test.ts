import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createDatabase } from '../../src/db/database.ts';
import { serverEnv, start } from '../helpers/server-process.ts';

/** A migration a later release applied (this release has no file of that name). */
const LATER = '29991231000000_from_a_later_release';

describe('data upgraded by a newer release', { timeout: 300000 }, () => {
  it('is refused by the service and by npm run migrate, in one line naming the migration, exit 1', async (t) => {
    const env = await serverEnv(t, { PORT: '0' });
    // the database as the newer release left it: every migration of this one, and one more
    const handle = await createDatabase({ databaseUrl: env.DATABASE_URL, dataDir: env.DATA_DIR, poolSize: 1 });
    try {
      await sql`INSERT INTO kysely_migration (name, timestamp) VALUES (${LATER}, ${new Date().toISOString()})`.execute(handle.db);
    } finally {
      await handle.close();
    }
    const expected = `data is from a newer release (migration ${LATER}): start that release or a newer one, or restore a backup made before the upgrade`;
    for (const script of ['src/server.ts', 'src/db/migrate-cli.ts']) {
      const proc = start(t, script, env);
      assert.deepEqual(await proc.exited, { code: 1, signal: null }, `${script}: ${proc.stderr()}`);
      assert.equal(proc.stderr().trim(), expected, script);
      assert.doesNotMatch(proc.stdout(), /corrupted migrations/, script);
    }
  });
});
