import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, type TestUser } from '../helpers/app.ts';
import { createProduct } from '../helpers/products.ts';
import { waitForFinal } from '../helpers/orders.ts';

/**
 * The order event bus's lookups: a listener's read runs inside the statement that writes the event,
 * and its rows reach that listener (and no other) with the event.
 */
describe('order event bus lookups', () => {
  let app: FastifyInstance;
  let alice: TestUser;
  const seen: { orderId: number; status: string; looked: readonly unknown[] | undefined; plain: boolean }[] = [];
  before(async () => {
    app = await buildTestApp(undefined);
    alice = await createUser(app);
    // reads the owner's e-mail and the status the event moves to: both come from the preview
    app.ctx.orderEvents.subscribe(
      async (_trx, event, _order, looked) => {
        seen.push({ orderId: event.order_id, status: event.status, looked, plain: false });
      },
      (db, preview) =>
        db
          .selectFrom('users')
          .select((eb) => ['email', eb.val(preview.status).as('next'), eb.val(preview.type).as('type')])
          .where('id', '=', preview.userId),
    );
    // a listener without a lookup gets nothing
    app.ctx.orderEvents.subscribe(async (_trx, event, _order, looked) => {
      seen.push({ orderId: event.order_id, status: event.status, looked, plain: true });
    });
  });
  after(() => app.close());

  it("hands each listener its own lookup's rows, read for the event's owner, type and new status", async () => {
    const product = await createProduct(app, { stock: 5, price: '2.50' });
    const res = await api(app, alice, { method: 'POST', url: '/api/v1/orders', payload: { items: [{ product_id: product.id, quantity: 1 }], shipping_address: '1 Bus Lane' } });
    assert.equal(res.statusCode, 201, res.body);
    const orderId = res.json<{ id: number }>().id;
    assert.equal((await waitForFinal(app, orderId)).status, 'completed');

    const withLookup = seen.filter((s) => s.orderId === orderId && !s.plain);
    assert.deepEqual(
      withLookup.map((s) => [s.status, s.looked]),
      [
        ['pending', [{ email: alice.email, next: 'pending', type: 'order.created' }]],
        ['processing', [{ email: alice.email, next: 'processing', type: 'order.status_changed' }]],
        ['completed', [{ email: alice.email, next: 'completed', type: 'order.status_changed' }]],
      ],
    );
    const plain = seen.filter((s) => s.orderId === orderId && s.plain);
    assert.deepEqual(
      plain.map((s) => [s.status, s.looked]),
      [
        ['pending', undefined],
        ['processing', undefined],
        ['completed', undefined],
      ],
    );
  });

  it('a lookup that finds nothing hands over an empty list', async () => {
    const empty: (readonly unknown[] | undefined)[] = [];
    app.ctx.orderEvents.subscribe(
      async (_trx, _event, _order, looked) => {
        empty.push(looked);
      },
      (db) => db.selectFrom('users').select('id').where('id', '=', -1),
    );
    const product = await createProduct(app, { stock: 5, price: '1.00' });
    const res = await api(app, alice, { method: 'POST', url: '/api/v1/orders', payload: { items: [{ product_id: product.id, quantity: 1 }], shipping_address: '2 Bus Lane' } });
    assert.equal(res.statusCode, 201, res.body);
    await waitForFinal(app, res.json<{ id: number }>().id);
    assert.deepEqual(empty, [[], [], []]);
  });
});
