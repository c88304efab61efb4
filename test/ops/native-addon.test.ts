import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

const run = promisify(execFile);
const root = path.join(import.meta.dirname, '..', '..');

/** A copy of the script and the C source in a directory of their own, laid out as in the repository. */
async function checkout(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'oas-native-'));
  t.after(() => fs.rm(dir, { recursive: true, force: true }));
  await fs.mkdir(path.join(dir, 'scripts'));
  await fs.mkdir(path.join(dir, 'native'));
  await fs.copyFile(path.join(root, 'scripts', 'build-native.ts'), path.join(dir, 'scripts', 'build-native.ts'));
  await fs.copyFile(path.join(root, 'native', 'malloc-trim.c'), path.join(dir, 'native', 'malloc-trim.c'));
  return dir;
}

const exists = (file: string) => fs.access(file).then(() => true, () => false);

describe('the native addon (native/malloc-trim.c, built by npm ci)', { skip: process.platform !== 'linux' && 'Linux only' }, () => {
  it('compiles, and its trim() returns whether glibc gave memory back', async (t) => {
    const dir = await checkout(t);
    const { stdout } = await run(process.execPath, [path.join(dir, 'scripts', 'build-native.ts')]);
    assert.match(stdout, /native addon built/);
    const addon = createRequire(import.meta.url)(path.join(dir, 'build', 'native', 'malloc-trim.node')) as { trim: () => boolean | null };
    assert.equal(typeof addon.trim(), 'boolean');
  });

  it('without a working C compiler, npm ci still succeeds: the build says why and builds nothing', async (t) => {
    const dir = await checkout(t);
    const { stderr } = await run(process.execPath, [path.join(dir, 'scripts', 'build-native.ts')], { env: { ...process.env, CC: 'false' } });
    assert.match(stderr, /native addon not built \(false failed/);
    assert.equal(await exists(path.join(dir, 'build', 'native', 'malloc-trim.node')), false);
  });
});
