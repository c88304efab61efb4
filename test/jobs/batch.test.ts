import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TestContext } from 'node:test';
import type { JobQueue } from '../../src/jobs/queue.ts';
import type { Job } from '../../src/jobs/registry.ts';
import { defer, waitFor } from '../helpers/app.ts';
import { testQueue } from './jobs.helpers.ts';

/** Job 1 is fetched alone; the ones sent during its batch's wait are fetched together after it. */
const LINGER_MS = 1500;

/**
 * A worker queue whose batch runs `together` and whose handler records the user id of each job it
 * runs; `batches` records the user ids of each batch handed to `together`, in order (a fetch hands
 * the jobs of one batch in no set order).
 */
async function batchingQueue(t: TestContext, together: (jobs: Job<'user-welcome-email'>[]) => Promise<ReadonlySet<string>>) {
  const alone: number[] = [];
  const batches: number[][] = [];
  const { queue } = await testQueue(t);
  queue.define({ name: 'user-welcome-email' });
  queue.work('user-welcome-email', async (job) => void alone.push(job.data.userId), 4, {
    lingerMs: LINGER_MS,
    batch: async (jobs) => {
      batches.push(jobs.map((j) => j.data.userId).sort((a, b) => a - b));
      return together(jobs);
    },
  });
  await queue.start();
  defer(t, () => queue.stop(1000));
  return { queue, alone, batches };
}

/**
 * Sends user 0's job, which, the first after the start, runs and completes at once (a quiet spell,
 * `lingerFor`); a second later user 1's, whose batch then waits; and, while it waits, the jobs of
 * `then`: they arrive as one batch.
 */
async function sendInTwoBatches(queue: JobQueue, alone: number[], then: number[]): Promise<string[]> {
  const opening = await queue.sendNow('user-welcome-email', { userId: 0 });
  await waitFor(async () => ((await statesOf(queue, [opening!]))[0] === 'completed' ? true : undefined));
  await sleep(1000);
  const first = await queue.sendNow('user-welcome-email', { userId: 1 });
  await waitFor(async () => (alone.includes(1) ? true : undefined));
  const ids: string[] = [first!];
  for (const userId of then) ids.push((await queue.sendNow('user-welcome-email', { userId }))!);
  return ids;
}

async function statesOf(queue: JobQueue, ids: string[]): Promise<string[]> {
  return Promise.all(ids.map(async (id) => (await queue.boss.getJobById('user-welcome-email', id))?.state ?? 'missing'));
}

describe('jobs of a batch run together (`batch` of JobQueue.work)', () => {
  it('hands a batch of two or more to `batch` first; the handler runs only the jobs it did not complete, and every job completes', async (t) => {
    const { queue, alone, batches } = await batchingQueue(t, async (jobs) => new Set(jobs.filter((j) => j.data.userId % 2 === 0).map((j) => j.id)));
    const ids = await sendInTwoBatches(queue, alone, [2, 3, 4]);
    await waitFor(async () => ((await statesOf(queue, ids)).every((s) => s === 'completed') ? true : undefined), 20_000);
    // the lone jobs never reach `batch`; the three that came together do, once
    assert.deepEqual(batches, [[2, 3, 4]]);
    assert.deepEqual(alone, [0, 1, 3]);
  });

  it('runs every job of a batch through the handler when `batch` throws', async (t) => {
    const { queue, alone, batches } = await batchingQueue(t, async () => {
      throw Object.assign(new Error('could not lock in time'), { code: '55P03' });
    });
    const ids = await sendInTwoBatches(queue, alone, [5, 6]);
    await waitFor(async () => ((await statesOf(queue, ids)).every((s) => s === 'completed') ? true : undefined), 20_000);
    assert.deepEqual(batches, [[5, 6]]);
    assert.deepEqual(alone.sort((a, b) => a - b), [0, 1, 5, 6]);
  });

  it('is refused for a queue fetched one job at a time', async (t) => {
    const { queue } = await testQueue(t);
    queue.define({ name: 'user-welcome-email', batchSize: 1 });
    assert.throws(() => queue.work('user-welcome-email', async () => {}, 1, { batch: async () => new Set() }), /running jobs together needs batches/);
  });
});
