import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { api, buildTestApp, createUser, type TestUser } from '../helpers/app.ts';
import { createProduct } from '../helpers/products.ts';
import { waitForFinal } from '../helpers/orders.ts';

/**
 * The order event bus: every creation and status change reaches every listener inside the
 * transaction that made it, with the order as the change left it; what a listener does commits
 * with the change or not at all.
 */
describe('order event bus', () => {
  let app: FastifyInstance;
  let alice: TestUser;
  const seen: { orderId: number; sequence: number; status: string; orderStatus: string; inTransaction: boolean }[] = [];
  // what the listener's read found for each event, by order id and status
  const owners = new Map<string, number[]>();
  let refuseCancellationOf: number | undefined;
  before(async () => {
    app = await buildTestApp(undefined);
    alice = await createUser(app);
    app.ctx.orderEvents.subscribe<{ id: number }>({
      // the owners' ids, read by the statement that writes the events
      read: (ownerIds) => sql<{ id: number }>`SELECT id FROM users WHERE id IN (${ownerIds})`,
      react: async (trx, changes, rows) => {
        for (const { event, order } of changes) {
          seen.push({ orderId: event.order_id, sequence: event.sequence, status: event.status, orderStatus: order.status, inTransaction: trx.isTransaction });
          owners.set(`${event.order_id} ${event.status}`, rows.map((r) => r.id));
          if (event.order_id === refuseCancellationOf && event.status === 'cancelled') throw new Error('listener refuses');
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

  it('hands every event of an order to the listener, in order, inside its transaction, with the order as changed', async () => {
    const orderId = await place();
    assert.equal((await waitForFinal(app, orderId)).status, 'completed');
    assert.deepEqual(
      seen.filter((s) => s.orderId === orderId),
      [
        { orderId, sequence: 1, status: 'pending', orderStatus: 'pending', inTransaction: true },
        { orderId, sequence: 2, status: 'processing', orderStatus: 'processing', inTransaction: true },
        { orderId, sequence: 3, status: 'completed', orderStatus: 'completed', inTransaction: true },
      ],
    );
  });

  it("gives the listener the rows its read found for the events' owners, read by the statement that wrote them", async () => {
    const orderId = await place();
    assert.equal((await waitForFinal(app, orderId)).status, 'completed');
    for (const status of ['pending', 'processing', 'completed']) assert.deepEqual(owners.get(`${orderId} ${status}`), [alice.user.id], status);
  });

  it("a listener's failure undoes the change: the cancellation is refused and the order stays as it was", async () => {
    const orderId = await place();
    await waitForFinal(app, orderId);
    refuseCancellationOf = orderId;
    try {
      const res = await api(app, alice, { method: 'POST', url: `/api/v2/orders/${orderId}/cancel`, payload: {} });
      assert.equal(res.statusCode, 500, res.body);
    } finally {
      refuseCancellationOf = undefined;
    }
    const order = await app.ctx.db.selectFrom('orders').select('status').where('id', '=', orderId).executeTakeFirstOrThrow();
    assert.equal(order.status, 'completed');
    const events = await app.ctx.db.selectFrom('order_events').select('status').where('order_id', '=', orderId).orderBy('sequence').execute();
    assert.deepEqual(events.map((e) => e.status), ['pending', 'processing', 'completed']);
  });
});
