import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

/** `npm test`'s runner (test/run.ts) on a file of its own, as `npm test` runs it; its exit and what it printed. */
async function runRunner(file: string, env: Record<string, string>): Promise<{ code: number | null; out: string; seconds: number }> {
  const t0 = performance.now();
  const child = spawn(process.execPath, ['test/run.ts', file], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
  child.stderr.on('data', (d: Buffer) => (out += d.toString('utf8')));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, out, seconds: (performance.now() - t0) / 1000 };
}

describe('the test runner', { timeout: 180000 }, () => {
  it('fails a batch whose `before` hook never settles, instead of waiting for it forever', async (t) => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'oas-runner-'));
    t.after(() => fs.rm(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'hangs.test.ts');
    // the interval keeps the process alive, as a pool waiting for a connection does
    await fs.writeFile(
      file,
      `import { before, describe, it } from 'node:test';
describe('a suite', () => {
  before(() => new Promise(() => setInterval(() => {}, 1000)));
  it('never runs', () => {});
});
`,
    );
    const run = await runRunner(file, { TEST_BATCH_TIMEOUT_SECONDS: '5' });
    assert.equal(run.code, 1, run.out);
    assert.match(run.out, /the batch was still running after 5 s \(TEST_BATCH_TIMEOUT_SECONDS\): killed/);
    assert.match(run.out, /✖ failing batches' files:\n {2}.*hangs\.test\.ts/);
    assert.match(run.out, /ℹ fail 1/);
    t.diagnostic(`the runner ended ${run.seconds.toFixed(1)} s after it started`);
  });
});
