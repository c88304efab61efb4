import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, errorBody, waitFor, type TestUser } from '../../helpers/app.ts';
import { createProduct } from '../../helpers/products.ts';
import { waitForFinal } from '../../helpers/orders.ts';
import { startReceiver, type Receiver } from '../../helpers/webhooks.ts';
import type { ProductRow } from '../../../src/modules/products/products.tables.ts';

const EVENT_FIELDS = ['created_at', 'details', 'previous_status', 'reason', 'sequence', 'status', 'type'];

interface OrderEvent {
  sequence: number;
  type: string;
  previous_status: string | null;
  status: string;
  reason: string | null;
  details: { lines: { product_id: number; requested: number; available: number }[] } | null;
  created_at: string;
}

describe("an order's events: GET /orders/{order_id}/events, and the failure in the outgoing payload", () => {
  let app: FastifyInstance;
  let alice: TestUser;
  let bob: TestUser;
  let admin: TestUser;
  let plenty: ProductRow;
  let scarce: ProductRow;
  let rare: ProductRow;
  let receiver: Receiver;

  const place = async (who: TestUser, items: { product_id: number; quantity: number }[]) => {
    const res = await api(app, who, { method: 'POST', url: '/api/v1/orders', payload: { items, shipping_address: '1 Main St' } });
    assert.equal(res.statusCode, 201, res.body);
    const id = res.json<{ id: number }>().id;
    await waitForFinal(app, id);
    return id;
  };
  const events = async (who: TestUser | null, orderId: number | string) => api(app, who, { method: 'GET', url: `/api/v1/orders/${orderId}/events` });

  before(async () => {
    receiver = await startReceiver();
    app = await buildTestApp(undefined, { webhookRetrySchedule: [0.2] });
    alice = await createUser(app);
    bob = await createUser(app);
    admin = await createUser(app, { admin: true });
    plenty = await createProduct(app, { price: '3.00', stock: 1000 });
    scarce = await createProduct(app, { price: '5.00', stock: 2 });
    rare = await createProduct(app, { price: '7.00', stock: 1 });
    const sub = await api(app, alice, { method: 'POST', url: '/api/v1/webhooks/subscriptions', payload: { url: receiver.url, events: ['order.status_changed'] } });
    assert.equal(sub.statusCode, 201, sub.body);
  });
  after(async () => {
    await app.close();
    await receiver.close();
  });

  it('lists the numbered events of a completed order, oldest first, with exactly the documented fields', async () => {
    const id = await place(alice, [{ product_id: plenty.id, quantity: 2 }]);
    const res = await events(alice, id);
    assert.equal(res.statusCode, 200, res.body);
    const list = res.json<OrderEvent[]>();
    for (const e of list) assert.deepEqual(Object.keys(e).sort(), EVENT_FIELDS);
    assert.deepEqual(
      list.map((e) => [e.sequence, e.type, e.previous_status, e.status, e.reason, e.details]),
      [
        [1, 'order.created', null, 'pending', null, null],
        [2, 'order.status_changed', 'pending', 'processing', null, null],
        [3, 'order.status_changed', 'processing', 'completed', null, null],
      ],
    );
    const times = list.map((e) => Date.parse(e.created_at));
    assert.deepEqual(times, [...times].sort((a, b) => a - b));
  });

  it('a stock failure names the reason and every short line (requested and available), not the lines that were covered', async () => {
    const id = await place(alice, [
      { product_id: plenty.id, quantity: 1 },
      { product_id: scarce.id, quantity: 3 },
      { product_id: rare.id, quantity: 1 },
      { product_id: scarce.id, quantity: 2 },
    ]);
    const list = (await events(alice, id)).json<OrderEvent[]>();
    const failed = list.at(-1)!;
    assert.equal(failed.status, 'failed');
    assert.equal(failed.previous_status, 'processing');
    assert.equal(failed.reason, 'INSUFFICIENT_STOCK');
    // the two lines of `scarce` together ask for 5 of the 2 there are; `rare` has enough
    assert.deepEqual(failed.details, { lines: [{ product_id: scarce.id, requested: 5, available: 2 }] });
    assert.ok(list.slice(0, -1).every((e) => e.reason === null && e.details === null));

    // the same reason and details go out in the order.status_changed payload of the failure
    const delivered = await waitFor(async () => {
      const bodies = receiver.requests.map((r) => JSON.parse(r.body) as { data: Record<string, unknown> });
      const mine = bodies.filter((b) => b.data.order_id === id);
      return mine.some((b) => b.data.status === 'failed') ? mine : undefined;
    });
    const failure = delivered.find((b) => b.data.status === 'failed')!;
    assert.equal(failure.data.reason, 'INSUFFICIENT_STOCK');
    assert.deepEqual(failure.data.details, { lines: [{ product_id: scarce.id, requested: 5, available: 2 }] });
    // the other status changes keep the envelope as it was
    const processing = delivered.find((b) => b.data.status === 'processing')!;
    assert.deepEqual(Object.keys(processing.data).sort(), ['order_id', 'previous_status', 'sequence', 'status', 'total_amount', 'user_id']);
  });

  it('a failure for another reason names it, without details; a retried order\'s new round has no reason until it fails again', async () => {
    const gone = await createProduct(app, { price: '1.00', stock: 10 });
    const res = await api(app, bob, { method: 'POST', url: '/api/v1/orders', payload: { items: [{ product_id: gone.id, quantity: 1 }], shipping_address: 'x' } });
    const id = res.json<{ id: number }>().id;
    await waitForFinal(app, id);
    // a completed order cannot be retried; make it fail instead: deactivate, retry is for failed ones only
    await app.ctx.db.updateTable('products').set({ is_active: false }).where('id', '=', gone.id).execute();
    await app.ctx.db.updateTable('orders').set({ status: 'failed', failure_reason: 'INSUFFICIENT_STOCK' }).where('id', '=', id).execute();
    const retried = await api(app, bob, { method: 'POST', url: `/api/v1/orders/${id}/retry` });
    assert.equal(retried.statusCode, 202, retried.body);
    await waitFor(async () => ((await events(bob, id)).json<OrderEvent[]>().at(-1)?.status === 'failed' ? true : undefined));
    const list = (await events(bob, id)).json<OrderEvent[]>();
    const pending = list.find((e) => e.status === 'pending' && e.sequence > 1)!;
    assert.equal(pending.reason, null);
    const last = list.at(-1)!;
    assert.equal(last.reason, 'PRODUCT_UNAVAILABLE');
    assert.equal(last.details, null);
  });

  it('owner only: 403 for another user and for an administrator, 404 missing, 422 bad id, 401 without a token', async () => {
    const id = await place(alice, [{ product_id: plenty.id, quantity: 1 }]);
    for (const who of [bob, admin]) {
      const res = await events(who, id);
      assert.equal(res.statusCode, 403, res.body);
      assert.equal(errorBody(res).error_code, 'FORBIDDEN');
    }
    for (const missing of [999999, 0, 99999999999]) {
      const res = await events(alice, missing);
      assert.equal(res.statusCode, 404);
      assert.equal(errorBody(res).error_code, 'NOT_FOUND');
    }
    assert.equal((await events(alice, 'abc')).statusCode, 422);
    assert.equal((await events(null, id)).statusCode, 401);
  });
});
