import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { createDatabase } from '../../src/db/database.ts';

describe('embedded database (PGlite)', () => {
  it('runs with the buffer pool it is given (EMBEDDED_SHARED_BUFFERS_MB), 32 MB by default', async (t) => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'oas-embedded-'));
    t.after(() => fs.rm(dataDir, { recursive: true, force: true }));
    const pool = async (sharedBuffersMb: number | undefined) => {
      const database = await createDatabase({ databaseUrl: ':memory:', dataDir, sharedBuffersMb });
      try {
        const { rows } = await sql<{ shared_buffers: string }>`SHOW shared_buffers`.execute(database.db);
        return rows[0].shared_buffers;
      } finally {
        await database.close();
      }
    };
    assert.equal(await pool(16), '16MB');
    assert.equal(await pool(undefined), '32MB');
  });
});
