import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defer, waitFor } from '../helpers/app.ts';
import { testQueue } from './jobs.helpers.ts';

/**
 * A job can become ready to fetch with no NOTIFY to wake the loop: a job sent behind another one
 * that was ready a moment ago sends none (`linkedJobCtes`), and one that comes due sends none of its
 * own. pg-boss's loop fetches again at once only after a full batch or a NOTIFY; after a batch that
 * was not full, the service's loop fetches once more itself (`JobQueue.start`), so such a job waits
 * for the batch ahead of it, not for the sweep or the loop's own poll.
 */
describe('the fetch after a batch that was not full', () => {
  it('takes a job that became ready, with no NOTIFY, while the batch ran', async (t) => {
    // the sweep for jobs come due runs once a minute here, as does each loop's own poll
    const { queue } = await testQueue(t, 'worker', { jobPollingSeconds: 60 });
    const ran: number[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    queue.define({ name: 'user-welcome-email' });
    queue.work('user-welcome-email', async (job) => {
      if (job.data.userId === 1) await held;
      ran.push(job.data.userId);
    }, 4);
    await queue.start();
    defer(t, () => queue.stop(1000));
    // due in a second: its NOTIFY, sent now, wakes the loop for a fetch that finds nothing
    const later = await queue.sendNow('user-welcome-email', { userId: 2 }, { startAfter: 1 });
    assert.ok(later);
    await queue.sendNow('user-welcome-email', { userId: 1 });
    // the batch of one runs until the delayed job has come due, with no NOTIFY since
    await waitFor(async () => {
      const job = await queue.boss.getJobById('user-welcome-email', later);
      return job && new Date(job.startAfter).getTime() < Date.now() - 200 ? true : undefined;
    });
    assert.deepEqual(ran, []);
    release();
    // well inside the minute of the sweep and the poll
    await waitFor(async () => (ran.length === 2 ? true : undefined), 10_000);
    assert.deepEqual(ran, [1, 2]);
  });
});
