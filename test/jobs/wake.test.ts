import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Wakes } from '../../src/jobs/wake.ts';

describe('wake-ups of a stately queue (Wakes)', () => {
  it('a quiet queue is woken at once; a burst meanwhile makes one more send after the spacing, not one per wake', async () => {
    const sends: number[] = [];
    const started = Date.now();
    const wakes = new Wakes(async () => {
      sends.push(Date.now() - started);
    }, 40);
    wakes.wake('q');
    assert.equal(sends.length, 1, 'the first wake is sent at once');
    for (let i = 0; i < 100; i++) wakes.wake('q');
    await wakes.settled();
    assert.equal(sends.length, 2, 'the burst is one send');
    assert.ok(sends[1] >= 35, `the second send waits for the spacing (${sends[1]} ms)`);
  });

  it('each queue is spaced on its own; settled() waits for the follow-up sends', async () => {
    const sends: string[] = [];
    const wakes = new Wakes(async (name) => {
      await new Promise((r) => setTimeout(r, 10));
      sends.push(name);
    }, 5);
    wakes.wake('a');
    wakes.wake('b');
    wakes.wake('a');
    await wakes.settled();
    assert.deepEqual(sends.sort(), ['a', 'a', 'b']);
  });
});
