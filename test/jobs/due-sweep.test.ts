import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defer, waitFor } from '../helpers/app.ts';
import { testQueue } from './jobs.helpers.ts';

/**
 * A job that comes due after it was sent (a delayed send, a retry after its backoff) sends no NOTIFY
 * of its own, and each fetch loop polls its queue by itself only once a minute: the worker process's
 * sweep for jobs come due is what wakes the loop.
 */
describe('the sweep for jobs come due (JobQueue.sweepDue)', () => {
  it('runs a delayed job soon after it comes due', async (t) => {
    const { queue } = await testQueue(t);
    const ran: number[] = [];
    queue.define({ name: 'user-welcome-email' });
    queue.work('user-welcome-email', async (job) => void ran.push(job.data.userId));
    await queue.start();
    defer(t, () => queue.stop(1000));
    // the send's own NOTIFY wakes the loop while the job is not yet due: its fetch finds nothing
    const id = await queue.sendNow('user-welcome-email', { userId: 5 }, { startAfter: 2 });
    assert.ok(id);
    // well inside the loop's own minute-long poll
    await waitFor(async () => (ran.includes(5) ? true : undefined), 15000, 100);
    assert.deepEqual(ran, [5]);
  });
});
