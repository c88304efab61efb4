import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { Job, JobPayloads } from '../../../src/jobs/registry.ts';
import type { OrderProcessorHooks } from '../../../src/modules/orders/order-processor.ts';
import { api, buildTestApp, createUser, waitFor, type TestUser } from '../../helpers/app.ts';
import { createProduct, stockOf } from '../../helpers/products.ts';
import { startReceiver, type Receiver } from '../../helpers/webhooks.ts';
import { clearHooks, eventsOf, processorFor, waitForFinal } from '../../helpers/orders.ts';

/**
 * DESIGN §4: after the last attempt the order is `failed` (PROCESSING_ERROR), whatever way that last
 * attempt ended — also when the handler could not record it (the attempt expired or lost its worker,
 * or recording the failure threw). pg-boss copies such a job to the queue's dead-letter queue, whose
 * handler fails the order.
 */
describe('orders whose job pg-boss gives up on', () => {
  let app: FastifyInstance;
  let alice: TestUser;
  let receiver: Receiver;
  const hooks: OrderProcessorHooks = {};

  before(async () => {
    app = await buildTestApp(undefined, {}, { hooks: { orderProcessing: hooks } });
    alice = await createUser(app);
    receiver = await startReceiver('/orders-hook');
    const sub = await api(app, alice, {
      method: 'POST',
      url: '/api/v1/webhooks/subscriptions',
      payload: { url: receiver.url, events: ['order.status_changed'] },
    });
    assert.equal(sub.statusCode, 201, sub.body);
  });
  after(async () => {
    await app.close();
    await receiver.close();
  });

  const lastOrderId = async () =>
    (await app.ctx.db.selectFrom('orders').select((eb) => eb.fn.max('id').as('id')).executeTakeFirst())?.id ?? 0;

  const place = async (productId: number) => {
    const res = await api(app, alice, {
      method: 'POST',
      url: '/api/v1/orders',
      payload: { items: [{ product_id: productId, quantity: 1 }], shipping_address: '1 Dead Letter Lane' },
    });
    assert.equal(res.statusCode, 201, res.body);
    return res.json<{ id: number }>().id;
  };

  /**
   * Changes the queue's settings for jobs sent from now on. pg-boss then looks the queue up afresh on
   * its next send, outside the sending transaction, which on embedded PGlite (one connection) would
   * wait for that transaction: the lookup is made here instead.
   */
  async function setOrderQueue(options: { expireInSeconds: number }) {
    await app.ctx.queue.boss.updateQueue('order-process', options);
    await app.ctx.queue.boss.findJobs('order-process', { id: '00000000-0000-0000-0000-000000000000' });
  }

  const transitions = async (orderId: number) => (await eventsOf(app, orderId)).map((e) => `${e.previous_status}->${e.status}`);

  const jobsOf = async (queue: string, orderId: number) => app.ctx.queue.boss.findJobs<JobPayloads['order-process']>(queue, { data: { orderId } });

  /** the order is failed with PROCESSING_ERROR, said so to its subscriber, and a retry completes it */
  async function assertFailedThenRetried(orderId: number, productId: number) {
    const order = await waitForFinal(app, orderId, 30000);
    assert.equal(order.status, 'failed');
    assert.equal(order.failure_reason, 'PROCESSING_ERROR');
    assert.equal(await stockOf(app, productId), 10, 'nothing reserved');
    assert.deepEqual(await transitions(orderId), ['null->pending', 'pending->processing', 'processing->failed']);
    const told = await waitFor(async () =>
      receiver.requests
        .map((r) => JSON.parse(r.body) as { data: { order_id: number; status: string } })
        .find((e) => e.data.order_id === orderId && e.data.status === 'failed'),
    );
    assert.equal(told.data.status, 'failed', 'the subscriber hears of the failure');

    const retry = await api(app, alice, { method: 'POST', url: `/api/v1/orders/${orderId}/retry` });
    assert.equal(retry.statusCode, 202, retry.body);
    const done = await waitForFinal(app, orderId, 30000);
    assert.equal(done.status, 'completed');
    assert.equal(await stockOf(app, productId), 9);
  }

  it('the last attempt expires while its handler hangs: the order fails, and can be retried', { timeout: 90000 }, async () => {
    // jobs sent from now on expire one second after they start
    await setOrderQueue({ expireInSeconds: 1 });
    const product = await createProduct(app, { stock: 10, price: '3.00' });
    const after = await lastOrderId();
    let release: () => void = () => {};
    const hung = new Promise<void>((resolve) => (release = resolve));
    const attempts: number[] = [];
    hooks.beforeReserve = async (orderId, attempt) => {
      if (orderId <= after) return;
      attempts.push(attempt);
      if (attempt < 3) throw new Error('injected transient fault');
      await hung; // the last attempt never returns while the job is live: a stuck or lost worker
    };
    let lateEnded: () => void = () => {};
    const ended = new Promise<void>((resolve) => (lateEnded = resolve));
    try {
      const id = await place(product.id);
      const order = await waitForFinal(app, id, 30000);
      assert.equal(order.status, 'failed', 'failed while the last attempt is still hanging');
      assert.deepEqual(attempts, [1, 2, 3]);
      const [job] = await jobsOf('order-process', id);
      assert.equal(job?.state, 'failed');
      assert.equal(job?.retryCount, 2);
      const [dead] = await jobsOf('order-process-dead-letter', id);
      assert.equal(dead?.sourceId, job?.id, 'the given-up job was copied to the dead-letter queue');

      // the abandoned attempt wakes up late: it finds the order failed and changes nothing
      hooks.afterProcess = (ids) => {
        if (ids.includes(id)) lateEnded();
      };
      release();
      await ended;
      clearHooks(hooks);
      await assertFailedThenRetried(id, product.id);
    } finally {
      release();
      clearHooks(hooks);
      await setOrderQueue({ expireInSeconds: 300 });
    }
  });

  it('recording the failure on the last attempt throws (database blip): the order still fails, and can be retried', { timeout: 60000 }, async () => {
    const product = await createProduct(app, { stock: 10, price: '3.00' });
    const after = await lastOrderId();
    let blips = 0;
    hooks.beforeReserve = (orderId) => {
      if (orderId > after) throw new Error('injected persistent fault');
    };
    hooks.beforeFail = (orderId) => {
      if (orderId <= after) return;
      blips++;
      throw new Error('injected: connection terminated unexpectedly');
    };
    try {
      const id = await place(product.id);
      const order = await waitForFinal(app, id, 30000);
      assert.equal(blips, 1, 'the handler tried to record the failure once, and could not');
      assert.equal(order.status, 'failed');
      const [dead] = await jobsOf('order-process-dead-letter', id);
      assert.deepEqual(dead?.sourceOutput, { message: 'injected: connection terminated unexpectedly' });
      clearHooks(hooks);
      await assertFailedThenRetried(id, product.id);
    } finally {
      clearHooks(hooks);
    }
  });

  it('a dead-letter job for an order that completed meanwhile, or run twice, changes nothing', async () => {
    const product = await createProduct(app, { stock: 10, price: '3.00' });
    const id = await place(product.id);
    assert.equal((await waitForFinal(app, id)).status, 'completed');
    const before = await transitions(id);
    for (let i = 0; i < 2; i++) await app.ctx.queue.sendNow('order-process-dead-letter', { orderId: id });
    await waitFor(async () => {
      const jobs = await jobsOf('order-process-dead-letter', id);
      return jobs.length === 2 && jobs.every((j) => j.state === 'completed') ? true : undefined;
    });
    const order = await app.ctx.db.selectFrom('orders').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    assert.equal(order.status, 'completed');
    assert.equal(order.failure_reason, null);
    assert.deepEqual(await transitions(id), before);
    assert.equal(await stockOf(app, product.id), 9);
  });

  it('an order given up on while still pending goes pending → processing → failed, never straight to failed', async () => {
    // every attempt failed before its move to processing committed: the order is still pending
    const row = await app.ctx.db
      .insertInto('orders')
      .values({ user_id: alice.user.id, total_amount: 0, shipping_address: 'Never Processed 1', failure_reason: null, external_id: null })
      .returningAll()
      .executeTakeFirstOrThrow();
    assert.equal(row.status, 'pending');
    const given = { id: 'x', name: 'order-process-dead-letter', data: { orderId: row.id }, sourceId: 'y', sourceCreatedOn: new Date(Date.now() - 60000), sourceRetryCount: 2, sourceOutput: { message: 'job timed out' } };
    assert.equal(await processorFor(app, hooks).abandon(given as unknown as Job<'order-process'>), true);
    assert.deepEqual(await transitions(row.id), ['pending->processing', 'processing->failed']);
    const order = await app.ctx.db.selectFrom('orders').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow();
    assert.equal(order.status, 'failed');
    assert.equal(order.failure_reason, 'PROCESSING_ERROR');
  });

  it('a dead-letter job from before a retry leaves the re-queued order to its new job, and none undoes a completed order', async () => {
    const product = await createProduct(app, { stock: 0, price: '3.00' });
    const processor = processorFor(app, hooks);
    const id = await place(product.id);
    assert.equal((await waitForFinal(app, id)).failure_reason, 'INSUFFICIENT_STOCK');
    const [first] = await jobsOf('order-process', id);
    assert.ok(first);
    const deadCopyOf = (job: Job<'order-process'>) =>
      ({ ...job, sourceId: job.id, sourceCreatedOn: job.createdOn, sourceRetryCount: 2, sourceOutput: { message: 'job timed out' } }) as Job<'order-process'>;

    // retried; its new job is held before the reservation
    await app.ctx.db.updateTable('products').set({ stock: 5 }).where('id', '=', product.id).execute();
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    hooks.beforeReserve = async (orderId) => {
      if (orderId === id) await held;
    };
    try {
      const retry = await api(app, alice, { method: 'POST', url: `/api/v1/orders/${id}/retry` });
      assert.equal(retry.statusCode, 202);
      await waitFor(async () => ((await app.ctx.db.selectFrom('orders').select('status').where('id', '=', id).executeTakeFirst())?.status === 'processing' ? true : undefined));
      // the first round's job, given up on (late): not the order's job any more
      assert.equal(await processor.abandon(deadCopyOf(first)), false);
      assert.equal((await app.ctx.db.selectFrom('orders').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status, 'processing');
    } finally {
      release();
      clearHooks(hooks);
    }
    assert.equal((await waitForFinal(app, id)).status, 'completed');
    assert.equal(await stockOf(app, product.id), 4);
    const jobs = await jobsOf('order-process', id);
    const second = jobs.find((j) => j.id !== first.id);
    assert.ok(second);
    // even the current job's dead-letter copy cannot undo a completed order
    assert.equal(await processor.abandon(deadCopyOf(second)), false);
    assert.deepEqual(await transitions(id), [
      'null->pending',
      'pending->processing',
      'processing->failed',
      'failed->pending',
      'pending->processing',
      'processing->completed',
    ]);
  });
});
