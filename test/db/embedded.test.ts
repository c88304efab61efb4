import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'kysely';
import { createDatabase } from '../../src/db/database.ts';
import { createEmbeddedDataDir } from '../../src/db/embedded-init.ts';
import { waitFor } from '../helpers/app.ts';

/** How long the orphan test waits for a process to appear or go: an orphan ends after the initdb step it is in. */
const ORPHAN_WAIT_MS = 60_000;

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
    // what a process killed during initdb leaves behind (under an earlier release's name and under
    // a process's own), and an empty directory an older release made first
    for (const left of [`${dir}.creating`, `${dir}.creating-12345`]) {
      await fs.mkdir(left, { recursive: true });
      await fs.writeFile(path.join(left, 'half-written'), 'x');
    }
    await fs.mkdir(dir);
    await createEmbeddedDataDir(dir, PGlite.defaultStartParams);
    assert.ok((await fs.readdir(dir)).includes('PG_VERSION'));
    assert.deepEqual(await fs.readdir(root), ['pgdata']);
    // a whole cluster is left as it is
    const before = (await fs.stat(path.join(dir, 'PG_VERSION'))).mtimeMs;
    await createEmbeddedDataDir(dir, PGlite.defaultStartParams);
    assert.equal((await fs.stat(path.join(dir, 'PG_VERSION'))).mtimeMs, before);
  });

  it('creates it in a child process that stops when the process that started it dies', async (t) => {
    const root = await fs.mkdtemp(path.join(os.tmpdir(), 'oas-embedded-orphan-'));
    t.after(() => fs.rm(root, { recursive: true, force: true }));
    // a start that finishes between the child being seen and the kill proves nothing: try again
    for (let attempt = 1; ; attempt++) {
      const outcome = await killStartMidway(path.join(root, `pgdata-${attempt}`));
      if (outcome === 'killed mid-way' || attempt === 3) {
        assert.equal(outcome, 'killed mid-way');
        return;
      }
    }
  });
});

/**
 * Starts createEmbeddedDataDir(dir) in a process of its own, kills that process with SIGKILL once
 * its initdb child is seen, and checks that the child goes and `dir` is never created.
 */
async function killStartMidway(dir: string): Promise<'killed mid-way' | 'finished before the kill'> {
  const init = new URL('../../src/db/embedded-init.ts', import.meta.url).href;
  const script = `const { createEmbeddedDataDir } = await import(${JSON.stringify(init)}); await createEmbeddedDataDir(${JSON.stringify(dir)}, ${JSON.stringify(PGlite.defaultStartParams)});`;
  const parent = spawn(process.execPath, ['--input-type=module', '--eval', script], { stdio: 'ignore' });
  const exited = new Promise<number | null>((resolve) => parent.once('exit', (code) => resolve(code)));
  try {
    const marker = `${dir}.creating-${parent.pid}`;
    const creators = await waitFor(async () => {
      const found = await processesNaming(marker);
      return found.length > 0 ? found : parent.exitCode !== null ? [] : undefined;
    }, ORPHAN_WAIT_MS).catch(() => assert.fail(`no initdb child was seen within ${ORPHAN_WAIT_MS} ms`));
    if (creators.length === 0) {
      assert.equal(await exited, 0, 'the start ends well');
      return 'finished before the kill';
    }
    assert.ok(!creators.includes(parent.pid!), 'initdb runs in a process of its own');
    parent.kill('SIGKILL');
    if ((await exited) === 0) return 'finished before the kill';
    await waitFor(async () => ((await processesNaming(marker)).length === 0 ? true : undefined), ORPHAN_WAIT_MS)
      .catch(() => assert.fail(`the initdb child outlived its parent by more than ${ORPHAN_WAIT_MS} ms`));
    await assert.rejects(fs.access(path.join(dir, 'PG_VERSION')), 'an orphan never puts a cluster in place');
    return 'killed mid-way';
  } finally {
    parent.kill('SIGKILL');
  }
}

/** The ids of the processes whose command line contains `text` (Linux's /proc). */
async function processesNaming(text: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await fs.readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(text)) pids.push(Number(entry));
  }
  return pids;
}
