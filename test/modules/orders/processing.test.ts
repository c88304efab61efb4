import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { api, buildTestApp, createUser, type TestUser } from '../../helpers/app.ts';
import { createProduct, stockOf } from '../../helpers/products.ts';
import type { OrderProcessorHooks } from '../../../src/modules/orders/order-processor.ts';
import { clearHooks, eventsOf, processorFor, waitForFinal } from '../../helpers/orders.ts';

describe('order processing', () => {
  let app: FastifyInstance;
  let alice: TestUser;
  const hooks: OrderProcessorHooks = {};
  before(async () => {
    // default worker settings (polling interval, concurrency) from the configuration
    app = await buildTestApp(undefined, {}, { hooks: { orderProcessing: hooks } });
    alice = await createUser(app);
  });
  after(() => app.close());

  /** Orders placed from now on have ids above this (hooks target them before their id is known). */
  const lastOrderId = async () =>
    (await app.ctx.db.selectFrom('orders').select((eb) => eb.fn.max('id').as('id')).executeTakeFirst())?.id ?? 0;

  const place = async (who: TestUser, items: { product_id: number; quantity: number }[]) => {
    const res = await api(app, who, { method: 'POST', url: '/api/v1/orders', payload: { items, shipping_address: '1 Test Way' } });
    assert.equal(res.statusCode, 201, res.body);
    return res.json<{ id: number }>().id;
  };

  it('50 orders at once for a product with stock 10: exactly 10 completed, 40 failed INSUFFICIENT_STOCK, stock 0', async () => {
    const product = await createProduct(app, { stock: 10, price: '3.33' });
    const buyers = await Promise.all(Array.from({ length: 5 }, () => createUser(app)));
    const ids = await Promise.all(Array.from({ length: 50 }, (_, i) => place(buyers[i % buyers.length]!, [{ product_id: product.id, quantity: 1 }])));
    const finals = await Promise.all(ids.map((id) => waitForFinal(app, id, 60000)));
    const completed = finals.filter((o) => o.status === 'completed');
    const failed = finals.filter((o) => o.status === 'failed');
    assert.equal(completed.length, 10);
    assert.equal(failed.length, 40);
    assert.ok(failed.every((o) => o.failure_reason === 'INSUFFICIENT_STOCK'));
    assert.ok(completed.every((o) => o.total_amount === '3.33'));
    assert.ok(failed.every((o) => Number(o.total_amount) === 0));
    assert.equal(await stockOf(app, product.id), 0);
    // every order has exactly one event per transition
    for (const id of ids.slice(0, 5)) assert.equal((await eventsOf(app, id)).length, 3);
  });

  it('stock is reserved for all lines or none', async () => {
    const plenty = await createProduct(app, { stock: 100, price: '1.00' });
    const scarce = await createProduct(app, { stock: 2, price: '1.00' });
    const id = await place(alice, [
      { product_id: plenty.id, quantity: 5 },
      { product_id: scarce.id, quantity: 3 },
    ]);
    const order = await waitForFinal(app, id);
    assert.equal(order.status, 'failed');
    assert.equal(order.failure_reason, 'INSUFFICIENT_STOCK');
    assert.equal(await stockOf(app, plenty.id), 100);
    assert.equal(await stockOf(app, scarce.id), 2);
    const lines = await app.ctx.db.selectFrom('order_items').select('unit_price').where('order_id', '=', id).execute();
    assert.ok(lines.every((l) => Number(l.unit_price) === 0));
  });

  it('lines of the same product are summed against its stock; totals are exact decimals', async () => {
    const product = await createProduct(app, { stock: 5, price: '0.10' });
    const other = await createProduct(app, { stock: 5, price: '0.20' });
    const tooMuch = await place(alice, [
      { product_id: product.id, quantity: 3 },
      { product_id: product.id, quantity: 3 },
    ]);
    assert.equal((await waitForFinal(app, tooMuch)).failure_reason, 'INSUFFICIENT_STOCK');
    const ok = await place(alice, [
      { product_id: product.id, quantity: 1 },
      { product_id: other.id, quantity: 1 },
      { product_id: product.id, quantity: 2 },
    ]);
    const order = await waitForFinal(app, ok);
    assert.equal(order.status, 'completed');
    assert.equal(order.total_amount, '0.50'); // 0.1 + 0.2 + 0.2, never 0.5000000000000001
    assert.equal(await stockOf(app, product.id), 2);
    assert.equal(await stockOf(app, other.id), 4);
  });

  it('a total over the largest amount fails TOTAL_TOO_LARGE and takes no stock; the largest amount itself completes', async () => {
    const dear = await createProduct(app, { stock: 10, price: '9999999999.99' });
    const cheap = await createProduct(app, { stock: 10, price: '0.01' });
    const over = await place(alice, [
      { product_id: dear.id, quantity: 1 },
      { product_id: cheap.id, quantity: 1 },
    ]);
    const failed = await waitForFinal(app, over);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.failure_reason, 'TOTAL_TOO_LARGE');
    assert.equal(await stockOf(app, dear.id), 10);
    assert.equal(await stockOf(app, cheap.id), 10);
    const atMost = await waitForFinal(app, await place(alice, [{ product_id: dear.id, quantity: 1 }]));
    assert.equal(atMost.status, 'completed');
    assert.equal(atMost.total_amount, '9999999999.99');
    assert.equal(await stockOf(app, dear.id), 9);
  });

  it('prices and names are copied at processing time; later catalogue changes do not alter the order', async () => {
    const product = await createProduct(app, { name: 'Original', stock: 10, price: '4.00' });
    const id = await place(alice, [{ product_id: product.id, quantity: 2 }]);
    await waitForFinal(app, id);
    await app.ctx.db.updateTable('products').set({ name: 'Renamed', price: '9.99' }).where('id', '=', product.id).execute();
    const res = await api(app, alice, { method: 'GET', url: `/api/v1/orders/${id}` });
    assert.equal(res.json().total_amount, 8);
    assert.deepEqual(
      res.json().items.map((l: { product_name: string; unit_price: number }) => [l.product_name, l.unit_price]),
      [['Original', 4]],
    );
  });

  it('the processing job is linked to its order by the worker that takes it, before processing, not in the order\'s own transaction', async () => {
    const product = await createProduct(app, { stock: 10 });
    const after = await lastOrderId();
    let linked: { queue: string }[] | undefined;
    hooks.beforeReserve = async (orderId) => {
      if (orderId > after) linked = await app.ctx.db.selectFrom('job_links').select('queue').where('order_id', '=', orderId).execute();
    };
    try {
      const id = await place(alice, [{ product_id: product.id, quantity: 1 }]);
      assert.equal((await waitForFinal(app, id)).status, 'completed');
      assert.deepEqual(linked?.map((l) => l.queue), ['order-process'], 'linked when processing begins');
      // a link written in the order's transaction would carry the same transaction time (microseconds)
      const later = await sql<{ later: boolean }>`SELECT l.created_at > o.created_at AS later FROM job_links l JOIN orders o ON o.id = l.order_id WHERE o.id = ${id}`.execute(app.ctx.db);
      assert.deepEqual(later.rows, [{ later: true }], 'linked after the order committed');
    } finally {
      clearHooks(hooks);
    }
  });

  it('a product deactivated before processing fails the order without reserving', async () => {
    const product = await createProduct(app, { stock: 10 });
    const after = await lastOrderId();
    hooks.beforeReserve = async (orderId) => {
      if (orderId > after) await app.ctx.db.updateTable('products').set({ is_active: false }).where('id', '=', product.id).execute();
    };
    try {
      const id = await place(alice, [{ product_id: product.id, quantity: 1 }]);
      const order = await waitForFinal(app, id);
      assert.equal(order.status, 'failed');
      assert.equal(order.failure_reason, 'PRODUCT_UNAVAILABLE');
      assert.equal(await stockOf(app, product.id), 10);
    } finally {
      clearHooks(hooks);
    }
  });

  it('running the job again, even concurrently, never reserves stock twice', async () => {
    const product = await createProduct(app, { stock: 10, price: '1.00' });
    const processor = processorFor(app, hooks);
    const id = await place(alice, [{ product_id: product.id, quantity: 3 }]);
    // the worker runs it too: three runs race for the one order
    const results = await Promise.all([processor.process(id), processor.process(id)]);
    const order = await waitForFinal(app, id);
    assert.equal(order.status, 'completed');
    for (const r of results) assert.ok(r === 'completed' || r === 'processing', String(r));
    assert.equal(await processor.process(id), 'completed');
    assert.equal(await stockOf(app, product.id), 7);
    const events = await eventsOf(app, id);
    assert.deepEqual(events.map((e) => e.status), ['pending', 'processing', 'completed']);
    // a stray duplicate job for a finished order changes nothing
    await app.ctx.queue.sendNow('order-process', { orderId: id });
    await processor.process(id);
    assert.equal(await stockOf(app, product.id), 7);
  });

  it('a transient fault is retried with backoff: two faults, then completed', async () => {
    const product = await createProduct(app, { stock: 10, price: '2.00' });
    const attempts: number[] = [];
    const after = await lastOrderId();
    hooks.beforeReserve = (orderId, attempt) => {
      if (orderId <= after) return;
      attempts.push(attempt);
      if (attempt <= 2) throw new Error('injected transient fault');
    };
    try {
      const id = await place(alice, [{ product_id: product.id, quantity: 1 }]);
      const order = await waitForFinal(app, id, 30000);
      assert.equal(order.status, 'completed');
      assert.deepEqual(attempts, [1, 2, 3]);
      assert.equal(await stockOf(app, product.id), 9);
      const events = await eventsOf(app, id);
      assert.deepEqual(events.map((e) => e.status), ['pending', 'processing', 'completed']);
    } finally {
      clearHooks(hooks);
    }
  });

  it('three faults: the order fails with PROCESSING_ERROR and nothing is reserved', async () => {
    const product = await createProduct(app, { stock: 10 });
    const attempts: number[] = [];
    const after = await lastOrderId();
    hooks.beforeReserve = (orderId, attempt) => {
      if (orderId <= after) return;
      attempts.push(attempt);
      throw new Error('injected persistent fault');
    };
    try {
      const id = await place(alice, [{ product_id: product.id, quantity: 1 }]);
      const order = await waitForFinal(app, id, 30000);
      assert.equal(order.status, 'failed');
      assert.equal(order.failure_reason, 'PROCESSING_ERROR');
      assert.deepEqual(attempts, [1, 2, 3]);
      assert.equal(await stockOf(app, product.id), 10);
      const events = await eventsOf(app, id);
      assert.deepEqual(events.map((e) => `${e.previous_status}->${e.status}`), ['null->pending', 'pending->processing', 'processing->failed']);
    } finally {
      clearHooks(hooks);
    }
  });

  it('background processing: 40 orders placed in a row all complete (latency reported; its target is checked by the bench)', async (t) => {
    const product = await createProduct(app, { stock: 100000, price: '1.25' });
    const ids: number[] = [];
    for (let i = 0; i < 40; i++) ids.push(await place(alice, [{ product_id: product.id, quantity: 1 }]));
    const finals = await Promise.all(ids.map((id) => waitForFinal(app, id)));
    assert.ok(finals.every((o) => o.status === 'completed'));
    const latencies = finals.map((o) => o.updated_at.getTime() - o.created_at.getTime()).sort((a, b) => a - b);
    const p95 = latencies[Math.ceil(latencies.length * 0.95) - 1]!;
    const p50 = latencies[Math.ceil(latencies.length * 0.5) - 1]!;
    t.diagnostic(`order processing latency (created → final, ${latencies.length} orders): p50 ${p50} ms, p95 ${p95} ms, max ${latencies.at(-1)} ms`);
  });
});
