import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { Config } from '../../src/config.ts';
import type { JobQueue } from '../../src/jobs/queue.ts';
import { defer, waitFor } from '../helpers/app.ts';
import { testQueue } from './jobs.helpers.ts';

/** A liveness bound, far above what any of these takes: a job stranded until a poll fails it. */
const PROMPTLY_MS = 10_000;

/** A started worker queue of user-welcome-email jobs with `handler`; polls a minute apart unless told. */
async function startedQueue(
  t: TestContext,
  handler: (userId: number) => Promise<void>,
  opts: { batchSize?: number; concurrency: number; together?: (userIds: number[]) => Promise<void>; config?: Partial<Config> },
): Promise<JobQueue> {
  const { queue } = await testQueue(t, 'worker', { jobPollingSeconds: 60, ...opts.config });
  return startQueue(t, queue, handler, opts);
}

async function startQueue(
  t: TestContext,
  queue: JobQueue,
  handler: (userId: number) => Promise<void>,
  opts: { batchSize?: number; concurrency: number; together?: (userIds: number[]) => Promise<void> },
): Promise<JobQueue> {
  queue.define({ name: 'user-welcome-email', ...(opts.batchSize === undefined ? {} : { batchSize: opts.batchSize }) });
  const together = opts.together;
  queue.work('user-welcome-email', (job) => handler(job.data.userId), opts.concurrency, together ? { together: (jobs) => together(jobs.map((j) => j.data.userId)) } : {});
  await queue.start();
  defer(t, () => queue.stop(1000));
  return queue;
}

async function sendAll(queue: JobQueue, userIds: number[]): Promise<void> {
  for (const userId of userIds) await queue.sendNow('user-welcome-email', { userId });
}

/**
 * Starts a queue whose handler records each job and holds job 1 until `more` has been sent while
 * it waits, so `more` arrives during job 1's batch; resolves once `more` is sent.
 */
async function sendDuringFirst(
  t: TestContext,
  ran: number[],
  more: number[],
  opts: { concurrency: number; together?: (userIds: number[]) => Promise<void> },
): Promise<void> {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const firstRunning = Promise.withResolvers<void>();
  const queue = await startedQueue(
    t,
    async (id) => {
      if (id === 1) {
        firstRunning.resolve();
        await gate;
      }
      ran.push(id);
    },
    opts,
  );
  await sendAll(queue, [1]);
  // job 1's batch has been fetched and runs: what is sent now arrives during it
  await firstRunning.promise;
  await sendAll(queue, more);
  release();
}

function until(predicate: () => boolean): Promise<true> {
  return waitFor(async () => (predicate() ? true : undefined), PROMPTLY_MS);
}

describe('fetching jobs: woken by NOTIFY, again at once while jobs keep coming (polls a minute apart)', () => {
  it('runs a lone job at once', async (t) => {
    const ran: number[] = [];
    const queue = await startedQueue(t, async (id) => void ran.push(id), { concurrency: 4 });
    await sendAll(queue, [1]);
    await until(() => ran.includes(1));
  });

  it('fetches the jobs sent while a batch ran right after it', async (t) => {
    const ran: number[] = [];
    await sendDuringFirst(t, ran, [2, 3], { concurrency: 4 });
    await until(() => [1, 2, 3].every((id) => ran.includes(id)));
  });

  it('drains a backlog of one-at-a-time jobs sent with one NOTIFY at full speed once pg-boss counts it', async (t) => {
    const ran: number[] = [];
    // polls two seconds apart: alone, they would take two jobs every two seconds
    const { queue, database } = await testQueue(t, 'worker', { jobPollingSeconds: 2 });
    await startQueue(t, queue, async (id) => void ran.push(id), { batchSize: 1, concurrency: 2 });
    const ids = Array.from({ length: 40 }, (_, i) => i + 1);
    // one transaction: PostgreSQL delivers its NOTIFYs of one channel and payload once
    await database.db.transaction().execute(async (trx) => {
      for (const userId of ids) await queue.send(trx, 'user-welcome-email', { userId });
    });
    await waitFor(async () => (ids.every((id) => ran.includes(id)) ? true : undefined), 25_000);
  });

  it('runs a delayed job once it comes due, by the poll', async (t) => {
    const ran: number[] = [];
    const queue = await startedQueue(t, async (id) => void ran.push(id), { concurrency: 1, config: { jobPollingSeconds: 0.5 } });
    await queue.sendNow('user-welcome-email', { userId: 7 }, { startAfter: 1 });
    await until(() => ran.includes(7));
  });
});

describe('jobs of a batch run together (`together` of JobQueue.work)', () => {
  it('hands a batch of two or more to `together`, and every job completes', async (t) => {
    const batches: number[][] = [];
    const alone: number[] = [];
    await sendDuringFirst(t, alone, [2, 3, 4], { concurrency: 4, together: async (ids) => void batches.push([...ids].sort((a, b) => a - b)) });
    await until(() => alone.includes(1) && batches.flat().length === 3);
    assert.deepEqual(alone, [1], 'a lone job goes to the handler');
    assert.deepEqual(batches.flat().sort(), [2, 3, 4]);
  });

  it('runs each job of the batch through the handler when `together` throws', async (t) => {
    const alone: number[] = [];
    await sendDuringFirst(t, alone, [2, 3, 4], { concurrency: 4, together: () => Promise.reject(new Error('not together')) });
    await until(() => [1, 2, 3, 4].every((id) => alone.includes(id)));
  });

  it('is refused for a queue fetched one job at a time', async (t) => {
    const { queue } = await testQueue(t);
    queue.define({ name: 'user-welcome-email', batchSize: 1 });
    assert.throws(() => queue.work('user-welcome-email', async () => {}, 1, { together: async () => {} }), /needs batches/);
  });
});
