import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { DEAD_LETTER_RETRY, JOB_LIVENESS } from '../../src/jobs/queue.ts';
import type { OrderProcessorHooks } from '../../src/modules/orders/order-processor.ts';
import { createUser, defer, testConfig } from '../helpers/app.ts';
import { createProduct } from '../helpers/products.ts';
import { clearHooks, eventsOf, waitForFinal } from '../helpers/orders.ts';

/**
 * A database whose queues were created by an earlier version: pg-boss's createQueue leaves an
 * existing queue as it is, so start-up must bring its settings (the dead letter among them) in line,
 * and hand the dead letter to the jobs already queued.
 */
describe('queues of a database created by an earlier version', () => {
  it('get their dead letters and settings at start-up, and so do the jobs already queued', { timeout: 120000 }, async (t) => {
    // the same database for both starts: PGlite files in the data directory, or the test's PostgreSQL database
    const config = await testConfig(t);

    // --- the earlier version: no dead-letter queues, an older expiry, and an order whose job waits
    const old: FastifyInstance = await buildApp(config);
    let oldClosed = false;
    defer(t, async () => {
      if (!oldClosed) await old.close();
    });
    const boss = old.ctx.queue.boss;
    await boss.updateQueue('order-process', { deadLetter: null, expireInSeconds: 900 });
    await boss.updateQueue('webhook-inbound-process', { deadLetter: null });
    await boss.deleteQueue('order-process-dead-letter');
    await boss.deleteQueue('webhook-inbound-process-dead-letter');
    const alice = await createUser(old);
    const product = await createProduct(old, { stock: 10 });
    const order = await old.ctx.db
      .insertInto('orders')
      .values({ user_id: alice.user.id, status: 'pending', total_amount: 0, shipping_address: '1 Old Road', failure_reason: null, source: 'api', external_id: null })
      .returningAll()
      .executeTakeFirstOrThrow();
    await old.ctx.db.insertInto('order_items').values({ order_id: order.id, product_id: product.id, product_name: product.name, quantity: 1, unit_price: 0 }).execute();
    const jobId = await old.ctx.queue.sendNow('order-process', { orderId: order.id }, { startAfter: 3600 });
    assert.ok(jobId);
    assert.equal((await boss.getJobById('order-process', jobId))?.deadLetter, null, 'sent without a dead letter');
    await old.close();
    oldClosed = true;

    // --- this version starts on that database
    const hooks: OrderProcessorHooks = {};
    const app = await buildApp(config, { hooks: { orderProcessing: hooks } });
    let appClosed = false;
    defer(t, async () => {
      if (!appClosed) await app.close();
    });
    const queues = new Map((await app.ctx.queue.boss.getQueues()).map((q) => [q.name, q]));
    assert.equal(queues.get('order-process')?.deadLetter, 'order-process-dead-letter');
    assert.equal(queues.get('order-process')?.expireInSeconds, JOB_LIVENESS.expireInSeconds);
    assert.equal(queues.get('webhook-inbound-process')?.deadLetter, 'webhook-inbound-process-dead-letter');
    for (const name of ['order-process-dead-letter', 'webhook-inbound-process-dead-letter']) {
      assert.equal(queues.get(name)?.retryLimit, DEAD_LETTER_RETRY.retryLimit, name);
      assert.equal(queues.get(name)?.retryDelay, DEAD_LETTER_RETRY.retryDelay, name);
      assert.equal(queues.get(name)?.deadLetter, null, name);
    }
    assert.equal((await app.ctx.queue.boss.getJobById('order-process', jobId))?.deadLetter, 'order-process-dead-letter', 'the queued job got it too');

    // that job now fails every attempt, and its handler cannot record the last one: the order fails all the same
    hooks.beforeReserve = () => {
      throw new Error('injected persistent fault');
    };
    hooks.beforeFail = () => {
      throw new Error('injected: connection terminated unexpectedly');
    };
    try {
      await sql`UPDATE pgboss.job SET start_after = now() WHERE id = ${jobId}::uuid`.execute(app.ctx.db);
      const failed = await waitForFinal(app, order.id, 30000);
      assert.equal(failed.status, 'failed');
      assert.equal(failed.failure_reason, 'PROCESSING_ERROR');
      const last = (await eventsOf(app, order.id)).at(-1);
      assert.equal(`${last?.previous_status}->${last?.status}`, 'processing->failed');
    } finally {
      clearHooks(hooks);
    }

    // a further start finds every queue as it wants it, and changes none
    const updatedOn = async (a: FastifyInstance) => new Map((await a.ctx.queue.boss.getQueues()).map((q) => [q.name, q.updatedOn.getTime()]));
    const settled = await updatedOn(app);
    await app.close();
    appClosed = true;
    const third = await buildApp(config);
    defer(t, () => third.close());
    assert.deepEqual(await updatedOn(third), settled);
  });
});
