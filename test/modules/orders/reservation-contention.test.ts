import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, createUser } from '../../helpers/app.ts';
import { createProduct, stockOf } from '../../helpers/products.ts';
import { processorFor } from '../../helpers/orders.ts';
import type { FastifyInstance } from 'fastify';
import type { Job } from '../../../src/jobs/registry.ts';
import { cancel, pendingOrder, statusOf, unitsHeld } from './cancel.helpers.ts';

const onServer = Boolean(process.env.TEST_DATABASE_URL);
/** concurrent lanes, each placing, processing and cancelling orders on the same few products */
const LANES = 6;
const ROUNDS = 80;
const BATCH_ROUNDS = 40;

/**
 * Placing an order takes KEY SHARE locks on its products (its lines' foreign keys) while other
 * transactions reserve and return their stock under FOR NO KEY UPDATE. A reservation that locked the
 * products and took the units in one statement deadlocked in this mix: the statement's UPDATE read
 * the products with the statement's own snapshot, older than the versions it had locked, and waited
 * on those versions' tuple locks behind transactions that waited for it. Needs a server: embedded
 * PGlite runs one transaction at a time.
 */
describe('stock reservation under contention (PostgreSQL)', { skip: !onServer && 'needs TEST_DATABASE_URL' }, () => {
  it(`${LANES} lanes × ${ROUNDS} rounds of place, process and cancel on shared products: no deadlock, stock conserved`, async (t) => {
    const app = await buildTestApp(t);
    const alice = await createUser(app);
    const START = 1_000_000;
    const products = await Promise.all(Array.from({ length: 4 }, () => createProduct(app, { stock: START, price: '1.00' })));
    const processor = processorFor(app, {});
    const failures: string[] = [];

    await Promise.all(
      Array.from({ length: LANES }, async (_, lane) => {
        for (let round = 0; round < ROUNDS; round++) {
          // two to four of the products, each lane and round its own pick: the lock sets overlap
          const picked = products.filter((_, i) => (lane + round + i) % 5 !== 0 || i === 0);
          const order = await pendingOrder(app, alice, picked.map((p, i) => ({ productId: p.id, quantity: 1 + ((lane + i) % 3) })));
          try {
            const status = await processor.process(order.id);
            if (status !== 'completed') failures.push(`order ${order.id}: ${status}`);
          } catch (err) {
            failures.push(`order ${order.id} processing: ${(err as Error).message}`);
            continue;
          }
          // every other completed order goes back, returning its units while others take theirs
          if (round % 2 === 1) {
            const res = await cancel(app, alice, order.id, { reason: 'contention' });
            if (res.statusCode !== 200) failures.push(`order ${order.id} cancel: ${res.statusCode} ${res.body}`);
          }
        }
      }),
    );
    assert.deepEqual(failures, []);

    await assertStockConserved(app, products, START);
  });

  it(`${LANES} lanes × ${BATCH_ROUNDS} rounds of batches processed together beside single orders and cancellations: each batch completes or gives way, stock conserved`, async (t) => {
    const app = await buildTestApp(t);
    const [alice, bob] = [await createUser(app), await createUser(app)];
    const START = 1_000_000;
    const products = await Promise.all(Array.from({ length: 4 }, () => createProduct(app, { stock: START, price: '1.00' })));
    const processor = processorFor(app, {});
    const failures: string[] = [];
    let gaveWay = 0;

    await Promise.all(
      Array.from({ length: LANES }, async (_, lane) => {
        for (let round = 0; round < BATCH_ROUNDS; round++) {
          const picked = products.filter((_, i) => (lane + round + i) % 5 !== 0 || i === 0);
          const lines = picked.map((p, i) => ({ productId: p.id, quantity: 1 + ((lane + i) % 3) }));
          // orders of two owners, in no one order across lanes
          const orders = await Promise.all([alice, bob, alice].map((owner) => pendingOrder(app, owner, lines)));
          const jobs = orders.map((o) => ({ id: `job-${o.id}`, data: { orderId: o.id } }) as Job<'order-process'>);
          // as the queue runs a batch: together, then, when that throws, each job on its own
          try {
            await processor.handleBatch(jobs);
          } catch (err) {
            const code = (err as { code?: string }).code;
            if (code === '40P01') gaveWay++;
            else failures.push(`batch of ${orders.map((o) => o.id).join(', ')}: ${(err as Error).message}`);
            for (const o of orders) {
              const status = await processor.process(o.id).catch((e: Error) => `error ${e.message}`);
              if (status !== 'completed') failures.push(`order ${o.id}: ${status}`);
            }
          }
          for (const o of orders) {
            if ((await statusOf(app, o.id)) !== 'completed') failures.push(`order ${o.id} not completed`);
          }
          // one completed order of the round goes back, returning its units while others take theirs
          const res = await cancel(app, round % 2 === 0 ? alice : bob, orders[round % 2].id, { reason: 'contention' });
          if (res.statusCode !== 200) failures.push(`order ${orders[round % 2].id} cancel: ${res.statusCode} ${res.body}`);
        }
      }),
    );
    t.diagnostic(`${gaveWay} of ${LANES * BATCH_ROUNDS} batches were chosen as a deadlock's victim`);
    assert.deepEqual(failures, []);
    await assertStockConserved(app, products, START);
  });
});

/** What is gone from each product is exactly what its completed orders hold. */
async function assertStockConserved(app: FastifyInstance, products: readonly { id: number }[], start: number): Promise<void> {
  const held = await unitsHeld(app);
  for (const p of products) {
    const units = held.get(p.id) ?? 0;
    assert.ok(units > 0, `product ${p.id} was never taken`);
    assert.equal((await stockOf(app, p.id)) + units, start, `product ${p.id}`);
  }
}
