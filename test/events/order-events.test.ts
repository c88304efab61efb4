import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, waitFor, type TestUser } from '../helpers/app.ts';
import { createProduct } from '../helpers/products.ts';
import { waitForFinal, waitForPublished } from '../helpers/orders.ts';

/**
 * The order event bus over the outbox: every creation and status change reaches every listener
 * after the change committed, in the publishing job's transaction, each order's events in
 * sequence, each event once; a listener's failure leaves the change as it is and hands the events
 * over again.
 */
describe('order event bus', () => {
  let app: FastifyInstance;
  let alice: TestUser;
  const seen: { eventId: number; orderId: number; sequence: number; status: string; inTransaction: boolean }[] = [];
  let refuseCancellationOf: number | undefined;
  let refusals = 0;
  before(async () => {
    app = await buildTestApp(undefined);
    alice = await createUser(app);
    app.ctx.orderEvents.subscribe({
      react: async (trx, events) => {
        for (const { event } of events) {
          if (event.order_id === refuseCancellationOf && event.status === 'cancelled' && refusals === 0) {
            refusals++;
            throw new Error('listener refuses once');
          }
          seen.push({ eventId: event.id, orderId: event.order_id, sequence: event.sequence, status: event.status, inTransaction: trx.isTransaction });
        }
      },
    });
  });
  after(() => app.close());

  async function place(): Promise<number> {
    const product = await createProduct(app, { stock: 5, price: '2.50' });
    const res = await api(app, alice, { method: 'POST', url: '/api/v1/orders', payload: { items: [{ product_id: product.id, quantity: 1 }], shipping_address: '1 Bus Lane' } });
    assert.equal(res.statusCode, 201, res.body);
    return res.json<{ id: number }>().id;
  }

  const of = (orderId: number) => seen.filter((s) => s.orderId === orderId);

  it('hands every event of an order to the listener once, in sequence, in the publishing transaction, and marks it published', async () => {
    const orderId = await place();
    assert.equal((await waitForFinal(app, orderId)).status, 'completed');
    await waitFor(async () => (of(orderId).length >= 3 ? true : undefined), 10_000);
    const got = of(orderId);
    assert.deepEqual(got.map((s) => [s.sequence, s.status, s.inTransaction]), [
      [1, 'pending', true],
      [2, 'processing', true],
      [3, 'completed', true],
    ]);
    assert.equal(new Set(seen.map((s) => s.eventId)).size, seen.length, 'an event handed over twice');
    // the listener ran inside the publishing transaction: the mark is seen once that commits
    const unpublished = () => app.ctx.db.selectFrom('order_events').select('id').where('order_id', '=', orderId).where('published', '=', false).execute();
    await waitFor(async () => ((await unpublished()).length === 0 ? true : undefined), 10_000);
  });

  it("a listener's failure leaves the change committed; the event is handed over again, once it succeeds", async () => {
    const orderId = await place();
    await waitForFinal(app, orderId);
    // its earlier events go first: a run that also carried them would hand them over again with the refused one
    await waitForPublished(app);
    refuseCancellationOf = orderId;
    const res = await api(app, alice, { method: 'POST', url: `/api/v2/orders/${orderId}/cancel`, payload: {} });
    assert.equal(res.statusCode, 200, res.body);
    const order = await app.ctx.db.selectFrom('orders').select('status').where('id', '=', orderId).executeTakeFirstOrThrow();
    assert.equal(order.status, 'cancelled');
    // the first publishing run failed on it; a retry of the job hands it over again
    const cancelled = await waitFor(async () => of(orderId).find((s) => s.status === 'cancelled'), 15_000);
    assert.equal(cancelled.sequence, 4);
    assert.equal(refusals, 1);
    assert.deepEqual(of(orderId).map((s) => s.sequence), [1, 2, 3, 4]);
  });
});
