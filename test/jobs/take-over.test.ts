import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import type { Config } from '../../src/config.ts';
import type { DatabaseHandle } from '../../src/db/database.ts';
import { JobQueue } from '../../src/jobs/queue.ts';
import { defer, LogCapture, waitFor } from '../helpers/app.ts';
import { testQueue } from './jobs.helpers.ts';

const onServer = Boolean(process.env.TEST_DATABASE_URL);

/** The next process on a data directory or database: a queue that records the welcome e-mails it runs in `ran`. */
async function nextProcess(t: TestContext, database: DatabaseHandle, config: Config, ran: number[], log = pino({ level: 'silent' })) {
  const queue = new JobQueue(database, config, log);
  queue.define({ name: 'user-welcome-email' });
  queue.work('user-welcome-email', async (job) => void ran.push(job.data.userId));
  const takenUp = await queue.start();
  defer(t, () => queue.stop(1000));
  return { queue, takenUp };
}

describe("a dead process's running jobs, on the embedded database", { skip: onServer && 'embedded database only: on PostgreSQL the heartbeat decides' }, () => {
  it('are taken up again at start-up, counted per queue, and run', async (t) => {
    // the process that died: it fetched a job and never finished it
    const { queue: dead, database, config } = await testQueue(t, 'worker');
    dead.define({ name: 'user-welcome-email' });
    await dead.start();
    await dead.sendNow('user-welcome-email', { userId: 42 });
    const [left] = await dead.boss.fetch('user-welcome-email');
    assert.ok(left, 'the job is running');
    await dead.stop(0);

    const ran: number[] = [];
    // the next process on the same data directory
    const { takenUp } = await nextProcess(t, database, config, ran);
    assert.deepEqual(takenUp, { 'user-welcome-email': 1 });
    await waitFor(async () => (ran.includes(42) ? true : undefined), 10_000);
  });

  it("leave pg-boss's own cron forwarding uncounted: it is failed back and forwarded, not called a crash's", async (t) => {
    // what a clean stop can leave: pg-boss's job forwarding a cron occurrence still `active`
    const { queue: before, database, config } = await testQueue(t, 'worker');
    before.define({ name: 'user-welcome-email' });
    await before.start();
    const sendIt = '__pgboss__send-it';
    await before.boss.send(sendIt, { name: 'user-welcome-email', data: { userId: 7 } });
    const [forwarding] = await before.boss.fetch(sendIt);
    assert.ok(forwarding, "pg-boss's forwarding job is running");
    await before.stop(0);

    const ran: number[] = [];
    const { queue, takenUp } = await nextProcess(t, database, config, ran);
    assert.deepEqual(takenUp, {}, 'nothing the start-up line calls a crash');
    assert.notEqual((await queue.boss.getJobById(sendIt, forwarding.id))?.state, 'active');
    // the occurrence is forwarded by pg-boss's own worker once its retry comes due
    await waitFor(async () => (ran.includes(7) ? true : undefined), 30_000, 100);
  });
});

describe("a dead worker's running jobs, on PostgreSQL", { skip: !onServer && 'PostgreSQL only: on the embedded database the start-up takes them up' }, () => {
  it('are failed back by the heartbeat, run again by a live worker, and logged in one line per queue', { timeout: 60000 }, async (t) => {
    // the worker that died: it fetched two jobs and never finished or heartbeated them
    const { queue: dead, database, config } = await testQueue(t, 'worker');
    dead.define({ name: 'user-welcome-email' });
    await dead.start();
    await dead.sendNow('user-welcome-email', { userId: 1 });
    await dead.sendNow('user-welcome-email', { userId: 2 });
    const left = await dead.boss.fetch('user-welcome-email', { batchSize: 2 });
    assert.equal(left.length, 2, 'both jobs are running');
    await dead.stop(0);

    const logs = new LogCapture();
    const ran: number[] = [];
    await nextProcess(t, database, config, ran, pino({ level: 'info' }, logs));
    // heartbeat 10 s + a supervision pass (2 s) + the first retry's delay
    await waitFor(async () => (ran.length === 2 ? true : undefined), 40_000, 200);
    // one line per queue and supervision pass: both jobs in one, or (their heartbeats lapsing either
    // side of a pass on a busy machine) one each
    const lines = await waitFor(async () => {
      const found = logs.parsed().filter((l) => String(l.msg).startsWith('jobs failed back to the queue after their worker stopped heartbeating'));
      return found.reduce((n, l) => n + Number(l.count), 0) >= 2 ? found : undefined;
    }, 5000, 100);
    assert.ok(lines.length <= 2, JSON.stringify(lines));
    for (const line of lines) assert.equal(line.queue, 'user-welcome-email');
    assert.deepEqual(lines.flatMap((l) => l.jobIds as string[]).sort(), left.map((j) => j.id).sort());
  });

  it('with no retry left are given up by the heartbeat, handled by the dead-letter queue, and logged', { timeout: 60000 }, async (t) => {
    const define = (queue: JobQueue) => queue.define({ name: 'webhook-inbound-process', retryLimit: 0 });
    const { queue: dead, database, config } = await testQueue(t, 'worker');
    define(dead);
    dead.workGivenUp('webhook-inbound-process', async () => {});
    await dead.start();
    await dead.sendNow('webhook-inbound-process', { inboundWebhookId: 5 });
    const [left] = await dead.boss.fetch('webhook-inbound-process');
    assert.ok(left, 'the job is running');
    await dead.stop(0);

    const logs = new LogCapture();
    const queue = new JobQueue(database, config, pino({ level: 'info' }, logs));
    define(queue);
    const givenUp: number[] = [];
    queue.workGivenUp('webhook-inbound-process', async (job) => void givenUp.push(job.data.inboundWebhookId));
    await queue.start();
    defer(t, () => queue.stop(1000));
    // heartbeat 10 s + a supervision pass (2 s), then the dead-letter copy is fetched
    await waitFor(async () => (givenUp.length > 0 ? true : undefined), 40_000, 200);
    const [line] = await waitFor(async () => {
      const found = logs.parsed().filter((l) => String(l.msg).startsWith('jobs given up with no retry left after their worker stopped heartbeating'));
      return found.length > 0 ? found : undefined;
    }, 5000, 100);
    assert.equal(line.queue, 'webhook-inbound-process-dead-letter');
    assert.deepEqual(line.jobIds, [left.id]);
    assert.deepEqual(givenUp, [5]);
  });
});
