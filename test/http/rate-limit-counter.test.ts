import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as tick, setTimeout as sleep } from 'node:timers/promises';
import { RateLimiterMemory, type RateLimiterRes } from 'rate-limiter-flexible';
import { WriteBehindCounter } from '../../src/http/rate-limit-counter.ts';

/** An in-memory store standing in for Redis, which records each batch of counts sent to it. */
class RecordingStore extends RateLimiterMemory {
  readonly sent: { key: string; points: number }[] = [];
  override consume(key: string | number, points = 1): Promise<RateLimiterRes> {
    this.sent.push({ key: String(key), points });
    return super.consume(key, points);
  }
}

const POINTS = 100;

function keysSent(store: RecordingStore): string[] {
  return store.sent.map((s) => s.key).sort();
}

function counterOn(store: RecordingStore): WriteBehindCounter {
  return new WriteBehindCounter({ limiter: store, points: POINTS, windowMs: 60_000, shared: () => true, onSendError: (err) => assert.fail(String(err)) });
}

/** Counts `n` requests of `key`, waiting for each answer, and for whatever they sent. */
async function countUpTo(counter: WriteBehindCounter, key: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) await counter.consume(key);
  await sleep(250);
}

describe('the write-behind rate-limit counter (WriteBehindCounter)', () => {
  it('lets requests in the first quarter of their limit wait a moment to be sent together, a key past it at once', async () => {
    const store = new RecordingStore({ points: POINTS, duration: 60 });
    const counter = counterOn(store);
    // each key's first request waits for the store; these then count here
    for (const key of ['a', 'b', 'c']) await counter.consume(key);
    store.sent.length = 0;
    for (const key of ['a', 'b', 'c']) assert.equal((await counter.consume(key)).remaining, POINTS - 2);
    await tick();
    await tick();
    assert.equal(store.sent.length, 0, 'nothing sent within a tick');
    await sleep(250);
    assert.deepEqual(keysSent(store), ['a', 'b', 'c'], 'sent together after the wait');

    // past the first quarter, a request is on its way within a tick
    await countUpTo(counter, 'd', POINTS / 4);
    store.sent.length = 0;
    assert.equal((await counter.consume('d')).remaining, POINTS - POINTS / 4 - 1);
    await tick();
    await tick();
    assert.deepEqual(store.sent, [{ key: 'd', points: 1 }]);
    await counter.close();
  });

  it('sends what waits at once when a request past the quarter comes, or when it closes', async () => {
    const store = new RecordingStore({ points: POINTS, duration: 60 });
    const counter = counterOn(store);
    await counter.consume('low');
    await countUpTo(counter, 'high', POINTS / 4);
    store.sent.length = 0;
    void counter.consume('low');
    void counter.consume('high');
    await tick();
    await tick();
    assert.deepEqual(keysSent(store), ['high', 'low']);

    store.sent.length = 0;
    void counter.consume('low');
    await counter.close();
    assert.deepEqual(store.sent, [{ key: 'low', points: 1 }]);
    assert.equal((await store.get('low'))?.consumedPoints, 3, 'the store holds every request');
  });
});
