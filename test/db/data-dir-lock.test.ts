import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { DataDirInUse, LOCK_FILE, lockDataDir } from '../../src/db/data-dir-lock.ts';
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

  it('is a file in the data directory that only its owner may open (mode 0600), naming its holder', async (t) => {
    const dir = await tempDir(t);
    const lock = await lockDataDir(dir);
    const stat = await fs.stat(path.join(dir, LOCK_FILE));
    assert.equal(stat.mode & 0o777, 0o600);
    assert.equal(stat.uid, process.getuid!());
    const written = JSON.parse(await fs.readFile(path.join(dir, LOCK_FILE), 'utf8')) as { pid: number; startedAt: string };
    assert.equal(written.pid, process.pid);
    assert.ok(Math.abs(Date.parse(written.startedAt) - (Date.now() - process.uptime() * 1000)) < 1000, written.startedAt);
    await lock.release();
  });

  it('takes no holder details from a lock file nobody holds: forged ones are overwritten', async (t) => {
    const dir = await tempDir(t);
    // pid 1 lives, so only the lock, not the file's content, can make these details count
    await fs.writeFile(path.join(dir, LOCK_FILE), JSON.stringify({ pid: 1, startedAt: '1970-01-01T00:00:00.000Z' }), { mode: 0o600 });
    const lock = await lockDataDir(dir);
    assert.equal((JSON.parse(await fs.readFile(path.join(dir, LOCK_FILE), 'utf8')) as { pid: number }).pid, process.pid);
    await lock.release();
  });

  it('does not follow a symbolic link planted as the lock file', async (t) => {
    const dir = await tempDir(t);
    const target = path.join(await tempDir(t), 'elsewhere');
    await fs.symlink(target, path.join(dir, LOCK_FILE));
    await assert.rejects(lockDataDir(dir), { code: 'ELOOP' });
    await assert.rejects(fs.access(target), { code: 'ENOENT' });
  });

  it('no longer cares about the abstract socket name the lock used to listen on (a squatter)', { skip: process.platform !== 'linux' && 'Linux only' }, async (t) => {
    const dir = await tempDir(t);
    const key = crypto.createHash('sha256').update(await fs.realpath(dir)).digest('hex').slice(0, 24);
    const squatter = net.createServer((socket) => socket.end(JSON.stringify({ pid: 1, startedAt: 'forged' })));
    await new Promise<void>((resolve) => squatter.listen(`\0order-account-service-${key}`, resolve));
    defer(t, () => new Promise((resolve) => squatter.close(resolve)));
    const lock = await lockDataDir(dir);
    await lock.release();
  });
});
