import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import type { DatabaseHandle } from '../../src/db/database.ts';
import { lingerFor, type JobQueue } from '../../src/jobs/queue.ts';
import { defer, waitFor } from '../helpers/app.ts';
import { testQueue } from './jobs.helpers.ts';

/** Long enough that the checks below run well inside one wait, on a slow machine too. */
const LINGER_MS = 3000;

/** A worker queue on the test's own database whose handler records the user id of each job it runs. */
async function lingeringQueue(t: TestContext, lingerMs: number, ran: number[]): Promise<{ queue: JobQueue; database: DatabaseHandle }> {
  const { queue, database } = await testQueue(t);
  queue.define({ name: 'user-welcome-email' });
  queue.work('user-welcome-email', async (job) => void ran.push(job.data.userId), 4, { lingerMs });
  await queue.start();
  return { queue, database };
}

/**
 * Job 0, run and completed, then a pause of `gapMs`: the first batch after the start does not wait
 * (a quiet spell, `lingerFor`), and the next one, `gapMs` later, waits as a trickle's does.
 */
async function warmUp(queue: JobQueue, ran: number[], gapMs: number): Promise<void> {
  const id = await queue.sendNow('user-welcome-email', { userId: 0 });
  assert.ok(id);
  await waitFor(async () => ((await jobOf(queue, id)).state === 'completed' ? true : undefined));
  assert.deepEqual(ran, [0], 'the first batch after a quiet spell completes at once');
  await sleep(gapMs);
}

async function jobOf(queue: JobQueue, id: string) {
  const job = await queue.boss.getJobById('user-welcome-email', id);
  assert.ok(job, `job ${id}`);
  return job;
}

describe("a fetch loop's linger after a batch that was not full (`lingerMs` of JobQueue.work)", () => {
  it('waits until a full batch can be expected at the recent rate, counted from the fetch, and at most lingerMs (lingerFor)', () => {
    const wait = (perMs: number, sinceFetchMs = 0, sincePreviousFetchMs = 100) => lingerFor({ lingerMs: 250, batchSize: 12, perMs, sinceFetchMs, sincePreviousFetchMs });
    // 50 jobs/s: twelve come in 240 ms
    assert.equal(wait(0.05), 240);
    assert.equal(wait(0.05, 40), 200, 'the batch\'s own time counts');
    // 250/s: twelve in 48 ms; 2,000/s: a batch is there by the time this one is done
    assert.equal(wait(0.25), 48);
    assert.equal(wait(2, 10), 0);
    // a trickle: the whole wait
    assert.equal(wait(0.001), 250);
    assert.equal(wait(0), 250);
    assert.equal(wait(0.001, 0, 1000), 250);
  });

  it('does not wait after a quiet spell (more than four waits since the fetch before), or at the first fetch', () => {
    const wait = (sincePreviousFetchMs: number) => lingerFor({ lingerMs: 250, batchSize: 12, perMs: 0.001, sinceFetchMs: 0, sincePreviousFetchMs });
    assert.equal(wait(1001), 0);
    assert.equal(wait(60_000), 0);
    assert.equal(wait(Infinity), 0);
  });

  it('completes the batch after the wait, and fetches the jobs sent meanwhile together', async (t) => {
    const ran: number[] = [];
    const { queue } = await lingeringQueue(t, LINGER_MS, ran);
    defer(t, () => queue.stop(1000));
    await warmUp(queue, ran, 1000);
    const first = await queue.sendNow('user-welcome-email', { userId: 1 });
    await waitFor(async () => (ran.includes(1) ? true : undefined));
    // the handler has run; its job stays active while the loop waits
    await sleep(300);
    assert.equal((await jobOf(queue, first!)).state, 'active');
    const second = await queue.sendNow('user-welcome-email', { userId: 2 });
    const third = await queue.sendNow('user-welcome-email', { userId: 3 });
    await sleep(300);
    assert.deepEqual(ran, [0, 1], 'jobs sent during the wait wait for it');
    await waitFor(async () => (ran.length === 4 ? true : undefined));
    assert.equal((await jobOf(queue, first!)).state, 'completed');
    const [b, c] = [await jobOf(queue, second!), await jobOf(queue, third!)];
    // one fetch claimed both: it stamps every job it claims with its own statement's time
    assert.ok(b.startedOn && c.startedOn);
    assert.equal(new Date(b.startedOn).getTime(), new Date(c.startedOn).getTime());
  });

  it('ends when the queue stops, which completes the waiting batch', async (t) => {
    const ran: number[] = [];
    const { queue, database } = await lingeringQueue(t, 60_000, ran);
    defer(t, () => queue.stop(1000));
    // a job 1.5 s after the one before: a rate of one per 3 s, a wait of 12 s (lingerFor)
    await warmUp(queue, ran, 1500);
    const id = await queue.sendNow('user-welcome-email', { userId: 7 });
    await waitFor(async () => (ran.includes(7) ? true : undefined));
    await sleep(300);
    assert.equal((await jobOf(queue, id!)).state, 'active');
    // a stop that waited out the linger would outlast its own graceful timeout and fail the job
    await queue.stop(5000);
    const { rows } = await sql<{ state: string }>`SELECT state FROM pgboss.job WHERE id = ${id}`.execute(database.db);
    assert.deepEqual(rows, [{ state: 'completed' }]);
  });

  it('is refused for a queue fetched one job at a time', async (t) => {
    const { queue } = await testQueue(t);
    queue.define({ name: 'user-welcome-email', batchSize: 1 });
    assert.throws(() => queue.work('user-welcome-email', async () => {}, 1, { lingerMs: 50 }), /lingering needs batches/);
  });
});
