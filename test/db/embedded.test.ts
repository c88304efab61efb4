import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'kysely';
import { createDatabase } from '../../src/db/database.ts';
import { createEmbeddedDataDir } from '../../src/db/embedded-init.ts';

describe('embedded database (PGlite)', () => {
  it('runs with the buffer pool it is given (EMBEDDED_SHARED_BUFFERS_MB), 16 MB by default', async (t) => {
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
    assert.equal(await pool(undefined), '16MB');
  });
});

describe('creating the embedded data directory', () => {
  it('builds it under a temporary name and renames it into place; a start killed half-way leaves nothing that blocks the next', async (t) => {
    const root = await fs.mkdtemp(path.join(os.tmpdir(), 'oas-embedded-create-'));
    t.after(() => fs.rm(root, { recursive: true, force: true }));
    const dir = path.join(root, 'pgdata');
    // what a process killed during initdb leaves behind, and an empty directory an older release made first
    await fs.mkdir(`${dir}.creating`, { recursive: true });
    await fs.writeFile(path.join(`${dir}.creating`, 'half-written'), 'x');
    await fs.mkdir(dir);
    await createEmbeddedDataDir(dir, PGlite.defaultStartParams);
    assert.ok((await fs.readdir(dir)).includes('PG_VERSION'));
    assert.deepEqual(await fs.readdir(root), ['pgdata']);
    // a whole cluster is left as it is
    const before = (await fs.stat(path.join(dir, 'PG_VERSION'))).mtimeMs;
    await createEmbeddedDataDir(dir, PGlite.defaultStartParams);
    assert.equal((await fs.stat(path.join(dir, 'PG_VERSION'))).mtimeMs, before);
  });
});
