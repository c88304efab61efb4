import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { DataDirInUse, lockDataDir } from '../../src/db/data-dir-lock.ts';
import { defer } from '../helpers/app.ts';

async function tempDir(t: TestContext): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'oas-lock-'));
  defer(t, () => fs.rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A child process that takes the lock of `dir`, says so, and waits to be killed. */
async function holderProcess(t: TestContext, dir: string): Promise<{ pid: number; kill: () => Promise<void> }> {
  const script = `
    import { lockDataDir } from ${JSON.stringify(path.resolve('src/db/data-dir-lock.ts'))};
    await lockDataDir(${JSON.stringify(dir)});
    process.stdout.write('locked\\n');
    setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  defer(t, async () => {
    child.kill('SIGKILL');
    await exited;
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => (d.toString().includes('locked') ? resolve() : undefined));
    child.once('exit', (code) => reject(new Error(`holder exited with ${code}`)));
  });
  return {
    pid: child.pid!,
    kill: async () => {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

describe('one process per data directory (DATA_DIR lock)', () => {
  it('refuses a second holder, naming the process that holds it, until the first releases it', async (t) => {
    const dir = await tempDir(t);
    const lock = await lockDataDir(dir);
    await assert.rejects(lockDataDir(dir), (err: unknown) => {
      assert.ok(err instanceof DataDirInUse);
      assert.equal(err.holder?.pid, process.pid);
      assert.match(err.message, new RegExp(`DATA_DIR ${dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is in use by process ${process.pid}`));
      return true;
    });
    await lock.release();
    const again = await lockDataDir(dir);
    await again.release();
  });

  it('names the same directory reached by another path (a symbolic link) as the same', async (t) => {
    const dir = await tempDir(t);
    const link = path.join(await tempDir(t), 'data');
    await fs.symlink(dir, link);
    const lock = await lockDataDir(dir);
    await assert.rejects(lockDataDir(link), DataDirInUse);
    await lock.release();
  });

  it("refuses another process while the holder lives, and takes the lock at once after it was killed", async (t) => {
    const dir = await tempDir(t);
    const holder = await holderProcess(t, dir);
    await assert.rejects(lockDataDir(dir), (err: unknown) => err instanceof DataDirInUse && err.holder?.pid === holder.pid);
    await holder.kill();
    const lock = await lockDataDir(dir);
    await lock.release();
  });
});
