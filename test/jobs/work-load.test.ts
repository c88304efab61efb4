import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from '../../src/config.ts';
import type { JobQueue } from '../../src/jobs/queue.ts';
import { defer, waitFor } from '../helpers/app.ts';
import { testQueue } from './jobs.helpers.ts';

/** A queue on the test's own database, with one handler whose lazily loaded part is `load`. */
async function queueWithLoad(t: TestContext, role: Config['role'], events: string[]): Promise<JobQueue> {
  const { queue } = await testQueue(t, role);
  queue.define({ name: 'user-welcome-email' });
  const load = async () => {
    events.push('load started');
    // long enough that a load start() did not wait for would still be running when start() returns
    await sleep(300);
    events.push('loaded');
  };
  queue.work('user-welcome-email', async () => void events.push('job ran'), 1, { load });
  return queue;
}

describe("a queue's lazily loaded part (`load` of JobQueue.work)", () => {
  it('is loaded once, at start, before the worker fetches its first job', async (t) => {
    const events: string[] = [];
    const queue = await queueWithLoad(t, 'worker', events);
    const started = queue.start();
    defer(t, () => queue.stop(1000));
    await started;
    assert.deepEqual(events, ['load started', 'loaded'], 'start() returns once the load is done');
    assert.ok(queue.boss.getWipData().some((w) => w.name === 'user-welcome-email'), "pg-boss runs the queue's worker");
    await queue.sendNow('user-welcome-email', { userId: 1 });
    await waitFor(async () => (events.includes('job ran') ? true : undefined));
    assert.deepEqual(events, ['load started', 'loaded', 'job ran']);
  });

  it('is never loaded by an API process, which runs no jobs', async (t) => {
    const events: string[] = [];
    const queue = await queueWithLoad(t, 'api', events);
    await queue.start();
    defer(t, () => queue.stop(1000));
    await queue.sendNow('user-welcome-email', { userId: 1 });
    // nothing is there to run it: pg-boss has no worker of the queue in this process, and the job waits
    assert.deepEqual(queue.boss.getWipData().map((w) => w.name), []);
    const [job] = await queue.boss.findJobs('user-welcome-email');
    assert.equal(job?.state, 'created');
    assert.deepEqual(events, []);
  });
});
