import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import v8 from 'node:v8';
import { releaseMemory, watchIdleMemory, type MemoryRelease } from '../../src/memory.ts';
import { loadConfig } from '../../src/config.ts';
import { waitFor } from '../helpers/app.ts';

/** The anonymous part of this process's resident set, in MiB (V8's heap and the C heap). */
const rssAnonMib = () => Number(/RssAnon:\s+(\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'))?.[1]) / 1024;
const addonBuilt = fs.existsSync(path.join(import.meta.dirname, '..', '..', 'build', 'native', 'malloc-trim.node'));

const newSpace = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;

/** Short-lived allocation until V8 has grown its young generation past `bytes` (bounded). */
function growYoungGeneration(bytes: number): void {
  let keep: unknown[] = [];
  for (let i = 0; i < 2_000_000 && newSpace() < bytes; i++) {
    keep.push({ i, s: `item-${i}` });
    if (keep.length > 50_000) keep = [];
  }
}

/** Busy the event loop in slices (timers still run between them) for `ms`. */
async function busy(ms: number): Promise<void> {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const slice = performance.now() + 5;
    while (performance.now() < slice);
    await new Promise((r) => setImmediate(r));
  }
}

describe('giving memory back (src/memory.ts)', () => {
  it('releaseMemory shrinks the young generation V8 grew, and reports what the process held', () => {
    growYoungGeneration(8 * 1048576);
    const before = newSpace();
    assert.ok(before >= 8 * 1048576, `the young generation grew (${before} bytes)`);
    const release = releaseMemory();
    assert.ok(newSpace() < before, `new space ${newSpace()} < ${before}`);
    assert.ok(release.rssBeforeMib > 0 && release.rssAfterMib > 0 && release.gcMs >= 0);
    // the gc function stays private: nothing is exposed globally
    assert.equal((globalThis as { gc?: unknown }).gc, undefined);
  });

  it('releaseMemory returns the C heap\'s freed pages to the system (malloc_trim through the native addon)', { skip: !addonBuilt && 'the native addon is not built (no C compiler at npm ci)' }, () => {
    // 64 MiB of array-buffer contents in the C heap; one in 16 stays alive, spread through it, so
    // the freed chunks are not at the top of the heap and glibc does not return them by itself
    let buffers: Buffer[] | null = Array.from({ length: 4096 }, () => Buffer.allocUnsafeSlow(16384).fill(1));
    const survivors = buffers.filter((_, i) => i % 16 === 15);
    const allocated = rssAnonMib();
    buffers = null;
    const release = releaseMemory();
    assert.equal(release.mallocTrimmed, true);
    const after = rssAnonMib();
    assert.ok(after < allocated - 40, `anonymous memory ${allocated.toFixed(1)} → ${after.toFixed(1)} MiB: most of the 60 MiB freed went back`);
    assert.equal(survivors.length, 256);
    assert.ok(survivors.every((b) => b[0] === 1));
  });

  it('a release with keepCode leaves compiled functions compiled; without it, releases in a row flush the ones not run since', () => {
    // V8's own view of each function (natives syntax, in a child process): bit 18 of
    // %GetOptimizationStatus is "lazy", compiled code dropped and to be compiled again on its next call
    const script = `
      import { releaseMemory } from ${JSON.stringify(path.join(import.meta.dirname, '..', '..', 'src', 'memory.ts'))};
      const fns = [0, 1, 2].map((k) => new Function('a', 'let s = ' + k + '; for (let i = 0; i < a; i++) s += i; return s;'));
      for (const f of fns) f(3);
      const lazy = () => fns.filter((f) => eval('%GetOptimizationStatus(f)') & (1 << 18)).length;
      const before = lazy();
      for (let i = 0; i < 3; i++) releaseMemory({ keepCode: process.argv[1] === 'keep' });
      process.stdout.write(JSON.stringify({ before, after: lazy() }));
    `;
    const run = (mode: string) =>
      JSON.parse(execFileSync(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', script, mode], { encoding: 'utf8' })) as { before: number; after: number };
    assert.deepEqual(run('keep'), { before: 0, after: 0 });
    assert.deepEqual(run('flush'), { before: 0, after: 3 });
  });

  it('watchIdleMemory releases once the loop has been idle long enough after the heap grew, not while busy', async () => {
    const releases: MemoryRelease[] = [];
    // ticks of 100 ms: the watcher's own timer callback (about 0.2 ms on a slow host) stays far
    // below the 2 % that makes a tick busy
    const stop = watchIdleMemory({ idleSeconds: 3, tickMs: 100, minGrowthBytes: 16 * 1048576, onRelease: (r) => releases.push(r) });
    try {
      // the heap grows by more than the threshold, and stays grown (kept alive until the end), so
      // no collection before the watcher's can take the growth away
      const ballast = Array.from({ length: 64 }, () => new Array<number>(65536).fill(1));
      // busy for 8 ticks: no three of them are idle, so nothing is released
      await busy(800);
      assert.equal(releases.length, 0, 'no release while the event loop is busy');
      // polled every 200 ms: a poll is itself event-loop work, and frequent ones would keep every tick busy
      const first = await waitFor(async () => releases[0], 10000, 200);
      assert.ok(first.rssBeforeMib > 0 && first.rssAfterMib > 0);
      // idle on, but the process has not grown again: no second release
      await new Promise((r) => setTimeout(r, 600));
      assert.equal(releases.length, 1);
      assert.equal(ballast.length, 64);
    } finally {
      stop();
    }
  });

  it('with a count of requests, a stretch without one is idle although the loop worked (a collection of V8\'s), and one with requests is not', async () => {
    // what the tests before this one left grown is given back first: the growth below must show
    releaseMemory();
    const releases: MemoryRelease[] = [];
    let requests = 0;
    const stop = watchIdleMemory({ idleSeconds: 3, tickMs: 100, minGrowthBytes: 16 * 1048576, activity: () => requests, onRelease: (r) => releases.push(r) });
    try {
      const ballast = Array.from({ length: 64 }, () => new Array<number>(65536).fill(1));
      // a request now and then, the loop otherwise quiet: never three ticks without one
      for (let i = 0; i < 8; i++) {
        requests++;
        await new Promise((r) => setTimeout(r, 60));
      }
      assert.equal(releases.length, 0, 'no release while requests come');
      // no request, the loop working about a fifth of the time: busy by utilisation alone, idle by the count
      const end = performance.now() + 10_000;
      while (releases.length === 0 && performance.now() < end) {
        const slice = performance.now() + 20;
        while (performance.now() < slice);
        await new Promise((r) => setTimeout(r, 80));
      }
      assert.equal(releases.length, 1, 'released once the requests stopped');
      assert.equal(ballast.length, 64);
    } finally {
      stop();
    }
  });

  it('MEMORY_RELEASE_IDLE_SECONDS defaults to 10; 0 turns the idle release off', () => {
    assert.equal(loadConfig({}).memoryReleaseIdleSeconds, 10);
    assert.equal(loadConfig({ MEMORY_RELEASE_IDLE_SECONDS: '0' }).memoryReleaseIdleSeconds, 0);
    assert.throws(() => loadConfig({ MEMORY_RELEASE_IDLE_SECONDS: '-1' }), /MEMORY_RELEASE_IDLE_SECONDS/);
  });
});
