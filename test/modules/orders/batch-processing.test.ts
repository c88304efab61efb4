import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import type { OrderRow } from '../../../src/db/schema.ts';
import type { Job } from '../../../src/jobs/registry.ts';
import { orderStatusTransitions } from '../../../src/modules/orders/orders.metrics.ts';
import type { OrderProcessor } from '../../../src/modules/orders/order-processor.ts';
import { buildTestApp, createUser, untilWaitingForLock, waitFor, type TestUser } from '../../helpers/app.ts';
import { eventsOf, processorFor } from '../../helpers/orders.ts';
import { createProduct, stockOf } from '../../helpers/products.ts';
import { startReceiver } from '../../helpers/webhooks.ts';
import { subscribe } from '../outbound-webhooks/outbound-webhooks.helpers.ts';
import { cancel, pendingOrder, statusOf } from './cancel.helpers.ts';

const onServer = Boolean(process.env.TEST_DATABASE_URL);

/** A fetched job of each order, as pg-boss hands a batch to the queue. */
function jobsOf(orders: readonly OrderRow[]): Job<'order-process'>[] {
  return orders.map((o) => ({ id: `job-${o.id}`, data: { orderId: o.id } }) as Job<'order-process'>);
}

async function orderOf(app: FastifyInstance, id: number): Promise<OrderRow> {
  return app.ctx.db.selectFrom('orders').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

async function unpublished(app: FastifyInstance): Promise<number> {
  return (await sql<{ n: number }>`SELECT count(*)::int AS n FROM order_events WHERE NOT published`.execute(app.ctx.db)).rows[0].n;
}

async function linesOf(app: FastifyInstance, id: number) {
  return app.ctx.db.selectFrom('order_items').select(['product_id', 'unit_price', 'product_name']).where('order_id', '=', id).orderBy('id').execute();
}

/** order_status_transitions_total by status, as this process counted so far. */
async function transitions(): Promise<Record<string, number>> {
  return Object.fromEntries((await orderStatusTransitions.get()).values.map((v) => [String(v.labels.status), v.value]));
}

describe('a batch of order jobs processed together (OrderProcessor.handleBatch)', () => {
  let app: FastifyInstance;
  let alice: TestUser;
  let bob: TestUser;
  let processor: OrderProcessor;

  before(async () => {
    app = await buildTestApp(undefined);
    [alice, bob] = [await createUser(app), await createUser(app)];
    processor = processorFor(app, {});
  });
  after(() => app.close());

  it('decides the orders in id order, each against the stock the ones before it left, and writes what one order alone would', async () => {
    const scarce = await createProduct(app, { name: 'Scarce', stock: 5, price: '2.50' });
    const plenty = await createProduct(app, { name: 'Plenty', stock: 100, price: '0.10' });
    const gone = await createProduct(app, { name: 'Gone', stock: 100 });
    const orders = [
      await pendingOrder(app, alice, [{ productId: scarce.id, quantity: 2 }, { productId: plenty.id, quantity: 3 }]),
      await pendingOrder(app, bob, [{ productId: scarce.id, quantity: 2 }]),
      // 1 left: this one is short, the next one fits
      await pendingOrder(app, alice, [{ productId: scarce.id, quantity: 2 }, { productId: plenty.id, quantity: 1 }]),
      await pendingOrder(app, bob, [{ productId: scarce.id, quantity: 1 }]),
      await pendingOrder(app, alice, [{ productId: plenty.id, quantity: 1 }, { productId: gone.id, quantity: 1 }]),
    ];
    // withdrawn after the order was placed
    await app.ctx.db.updateTable('products').set({ is_active: false }).where('id', '=', gone.id).execute();
    const counted = await transitions();

    await processor.handleBatch(jobsOf(orders));

    const finals = await Promise.all(orders.map((o) => orderOf(app, o.id)));
    assert.deepEqual(
      finals.map((o) => [o.status, o.total_amount, o.failure_reason]),
      [
        ['completed', '5.30', null],
        ['completed', '5.00', null],
        ['failed', '0.00', 'INSUFFICIENT_STOCK'],
        ['completed', '2.50', null],
        ['failed', '0.00', 'PRODUCT_UNAVAILABLE'],
      ],
    );
    assert.equal(await stockOf(app, scarce.id), 0);
    assert.equal(await stockOf(app, plenty.id), 97);
    assert.equal(await stockOf(app, gone.id), 100);
    // the completed orders' lines carry the prices and names; the failed ones' stay unpriced
    assert.deepEqual(await linesOf(app, orders[0].id), [
      { product_id: scarce.id, unit_price: '2.50', product_name: 'Scarce' },
      { product_id: plenty.id, unit_price: '0.10', product_name: 'Plenty' },
    ]);
    assert.ok((await linesOf(app, orders[2].id)).every((l) => Number(l.unit_price) === 0));
    for (const [i, o] of orders.entries()) {
      const events = await eventsOf(app, o.id);
      assert.deepEqual(
        events.map((e) => [e.sequence, e.previous_status, e.status]),
        [
          [1, null, 'pending'],
          [2, 'pending', 'processing'],
          [3, 'processing', finals[i].status],
        ],
        `order ${o.id}`,
      );
    }
    // the short line, with what was left of it when this order's turn came
    const failure = await app.ctx.db.selectFrom('order_events').select(['reason', 'details']).where('order_id', '=', orders[2].id).where('status', '=', 'failed').executeTakeFirstOrThrow();
    assert.equal(failure.reason, 'INSUFFICIENT_STOCK');
    assert.deepEqual(failure.details, { lines: [{ product_id: scarce.id, requested: 2, available: 1 }] });
    // the metric counts each move once: five to processing, three completed, two failed
    const now = await transitions();
    assert.deepEqual(
      ['processing', 'completed', 'failed'].map((status) => now[status] - counted[status]),
      [5, 3, 2],
    );
  });

  it('leaves an order that is final already, and an order cancelled meanwhile, as it is', async () => {
    const product = await createProduct(app, { stock: 10, price: '1.00' });
    const [done1, cancelled, fresh1, fresh2] = await Promise.all([1, 2, 3, 4].map(() => pendingOrder(app, alice, [{ productId: product.id, quantity: 1 }])));
    assert.equal(await processor.process(done1.id), 'completed');
    assert.equal((await cancel(app, alice, cancelled.id, { reason: 'changed my mind' })).statusCode, 200);

    await processor.handleBatch(jobsOf([done1, cancelled, fresh1, fresh2]));

    assert.equal(await statusOf(app, cancelled.id), 'cancelled');
    assert.equal(await statusOf(app, fresh1.id), 'completed');
    assert.equal(await statusOf(app, fresh2.id), 'completed');
    assert.equal(await stockOf(app, product.id), 7);
    // the jobs left over find nothing to do: their orders are final
    assert.equal(await processor.process(done1.id), 'completed');
    assert.equal(await processor.process(cancelled.id), 'cancelled');
    assert.equal(await stockOf(app, product.id), 7);
    assert.equal((await eventsOf(app, done1.id)).length, 3);
  });

  it("publishes every event of the batch: a subscriber hears of its own order, and of no other", async (t) => {
    const receiver = await startReceiver();
    t.after(() => receiver.close());
    const carol = await createUser(app);
    await subscribe(app, carol, receiver.url);
    const product = await createProduct(app, { stock: 10, price: '1.00' });
    const heard = await pendingOrder(app, carol, [{ productId: product.id, quantity: 2 }]);
    const quiet = await Promise.all([1, 2].map(() => pendingOrder(app, bob, [{ productId: product.id, quantity: 1 }])));

    await processor.handleBatch(jobsOf([heard, ...quiet]));

    for (const o of [heard, ...quiet]) assert.equal(await statusOf(app, o.id), 'completed');
    const messages = async (orderId: number) =>
      (await sql<{ n: number }>`SELECT count(*)::int AS n FROM webhook_messages WHERE order_id = ${orderId}`.execute(app.ctx.db)).rows[0].n;
    // created, processing and completed, for the one subscription, once the processing's publishing job ran
    await waitFor(async () => (await messages(heard.id)) === 3 || undefined);
    await waitFor(async () => (await unpublished(app)) === 0 || undefined);
    for (const o of quiet) assert.equal(await messages(o.id), 0);
    assert.equal(await stockOf(app, product.id), 6);
  });

  it('takes an order of two jobs once', async () => {
    const product = await createProduct(app, { stock: 10, price: '1.00' });
    const [a, b] = await Promise.all([1, 2].map(() => pendingOrder(app, bob, [{ productId: product.id, quantity: 1 }])));
    const twice = [...jobsOf([a]), { id: 'another', data: { orderId: a.id } } as Job<'order-process'>];
    await processor.handleBatch([...twice, ...jobsOf([b])]);
    assert.equal(await statusOf(app, a.id), 'completed');
    assert.equal(await statusOf(app, b.id), 'completed');
    assert.equal(await stockOf(app, product.id), 8);
    assert.equal((await eventsOf(app, a.id)).length, 3);
  });
});

/** Needs a server: embedded PGlite runs one transaction at a time. */
describe('a batch that meets a lock (PostgreSQL)', { skip: !onServer && 'needs TEST_DATABASE_URL' }, () => {
  it('waits for the lock, then processes every order once', async (t) => {
    const app = await buildTestApp(t);
    const owner = await createUser(app);
    const processor = processorFor(app, {});
    const product = await createProduct(app, { stock: 10, price: '1.00' });
    const orders = await Promise.all([1, 2, 3].map(() => pendingOrder(app, owner, [{ productId: product.id, quantity: 1 }])));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    // another transaction holds the middle order's row
    const holder = app.ctx.db.transaction().execute(async (trx) => {
      await sql`SELECT id FROM orders WHERE id = ${orders[1].id} FOR UPDATE`.execute(trx);
      locked();
      await released;
    });
    await isLocked;
    const batch = processor.handleBatch(jobsOf(orders));
    await untilWaitingForLock(app);
    assert.equal(await statusOf(app, orders[1].id), 'pending', 'the batch waits for the lock');
    release();
    await holder;
    await batch;
    assert.deepEqual(await Promise.all(orders.map((o) => statusOf(app, o.id))), ['completed', 'completed', 'completed']);
    assert.equal(await stockOf(app, product.id), 7);
  });
});
