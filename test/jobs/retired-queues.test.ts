import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { syncQueues } from '../../src/jobs/job-policies.ts';
import { buildTestApp } from '../helpers/app.ts';

/** A queue an earlier version scheduled (the counters' fold, decision 011) is deleted with its schedule. */
describe('retired queues', () => {
  it('order-counts-fold and its schedule are gone after the queues are brought in line', async (t) => {
    const app = await buildTestApp(t);
    const boss = app.ctx.queue.boss;
    // as an earlier version left it
    await boss.createQueue('order-counts-fold');
    await boss.schedule('order-counts-fold', '* * * * *');
    assert.equal((await boss.getSchedules('order-counts-fold')).length, 1);

    await syncQueues(boss, [], 7, app.ctx.log);
    assert.equal(await boss.getQueue('order-counts-fold'), null);
    assert.deepEqual(await boss.getSchedules('order-counts-fold'), []);
    // a second pass finds nothing to delete
    await syncQueues(boss, [], 7, app.ctx.log);
  });

  it('a queue whose definition names another policy is made anew with it (order-events-publish: standard before, stately now)', async (t) => {
    const app = await buildTestApp(t);
    const boss = app.ctx.queue.boss;
    const name = 'order-events-publish';
    assert.equal((await boss.getQueue(name))?.policy, 'stately');
    // as an earlier version left it
    await boss.deleteQueue(name);
    await boss.createQueue(name, { policy: 'standard' });
    await syncQueues(boss, [{ name, policy: 'stately' }], 7, app.ctx.log);
    assert.equal((await boss.getQueue(name))?.policy, 'stately');
  });
});
