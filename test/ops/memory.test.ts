import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import v8 from 'node:v8';
import { releaseMemory, watchIdleMemory, type MemoryRelease } from '../../src/memory.ts';
import { loadConfig } from '../../src/config.ts';
import { waitFor } from '../helpers/app.ts';

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

  it('watchIdleMemory releases once the loop has been idle long enough after the heap grew, not while busy', async () => {
    const releases: MemoryRelease[] = [];
    const stop = watchIdleMemory({ idleSeconds: 3, tickMs: 20, minGrowthBytes: 8 * 1048576, onRelease: (r) => releases.push(r) });
    try {
      // the heap grows by more than the threshold, and stays grown (kept alive until the end), so
      // no collection before the watcher's can take the growth away
      const ballast = Array.from({ length: 64 }, () => new Array<number>(65536).fill(1));
      // busy for 15 ticks: no three of them are idle, so nothing is released
      await busy(300);
      assert.equal(releases.length, 0, 'no release while the event loop is busy');
      const first = await waitFor(async () => releases[0], 10000, 10);
      assert.ok(first.rssBeforeMib > 0 && first.rssAfterMib > 0);
      // idle on, but the heap has not grown again: no second release
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(releases.length, 1);
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
