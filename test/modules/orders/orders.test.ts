import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, errorBody, type TestUser } from '../../helpers/app.ts';
import { createProduct, stockOf } from '../../helpers/products.ts';
import { eventsOf, waitForFinal } from '../../helpers/orders.ts';
import type { ProductRow } from '../../../src/modules/products/products.tables.ts';

const SUMMARY_FIELDS = ['created_at', 'id', 'status', 'total_amount', 'updated_at', 'user_id'];
const DETAIL_FIELDS = ['created_at', 'id', 'items', 'shipping_address', 'status', 'total_amount', 'updated_at', 'user_id'];

describe('orders', () => {
  let app: FastifyInstance;
  let alice: TestUser;
  let bob: TestUser;
  let admin: TestUser;
  let pen: ProductRow;
  let ink: ProductRow;
  before(async () => {
    app = await buildTestApp(undefined);
    alice = await createUser(app);
    bob = await createUser(app);
    admin = await createUser(app, { admin: true });
    pen = await createProduct(app, { name: 'Pen', price: '0.10', stock: 1000 });
    ink = await createProduct(app, { name: 'Ink', price: '0.20', stock: 1000 });
  });
  after(() => app.close());

  const place = (who: TestUser, payload: unknown, headers: Record<string, string> = {}) =>
    api(app, who, { method: 'POST', url: '/api/v1/orders', payload: payload as Record<string, unknown>, headers });
  const orderCount = async () => (await app.ctx.db.selectFrom('orders').select('id').execute()).length;

  it('POST /orders: 201 at once with exactly the spec fields, pending, zero prices', async () => {
    const res = await place(alice, { items: [{ product_id: pen.id, quantity: 3 }, { product_id: ink.id, quantity: 1 }], shipping_address: '1 Main St' });
    assert.equal(res.statusCode, 201, res.body);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['created_at', 'id', 'items', 'status', 'total_amount', 'user_id']);
    assert.equal(body.status, 'pending');
    assert.equal(body.total_amount, 0);
    assert.equal(body.user_id, alice.user.id);
    assert.deepEqual(body.items, [
      { product_id: pen.id, quantity: 3, unit_price: 0 },
      { product_id: ink.id, quantity: 1, unit_price: 0 },
    ]);
    // the order, its lines, its event and its job were committed together
    const lines = await app.ctx.db.selectFrom('order_items').selectAll().where('order_id', '=', body.id).execute();
    assert.equal(lines.length, 2);
    const events = await eventsOf(app, body.id);
    assert.equal(events[0]?.type, 'order.created');
    assert.equal(events[0]?.sequence, 1);
    const final = await waitForFinal(app, body.id);
    assert.equal(final.status, 'completed');
    // 3 × 0.10 + 0.20 in exact decimal arithmetic
    assert.equal(final.total_amount, '0.50');
  });

  it('a completed order reads back with names, prices and total', async () => {
    const created = (await place(alice, { items: [{ product_id: ink.id, quantity: 3 }], shipping_address: 'Somewhere 5' })).json();
    await waitForFinal(app, created.id);
    const res = await api(app, alice, { method: 'GET', url: `/api/v1/orders/${created.id}` });
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), DETAIL_FIELDS);
    assert.equal(body.status, 'completed');
    assert.equal(body.total_amount, 0.6);
    assert.equal(body.shipping_address, 'Somewhere 5');
    assert.equal(body.items.length, 1);
    assert.deepEqual(Object.keys(body.items[0]).sort(), ['id', 'product_id', 'product_name', 'quantity', 'unit_price']);
    assert.equal(body.items[0].product_name, 'Ink');
    assert.equal(body.items[0].unit_price, 0.2);
    assert.equal(body.items[0].quantity, 3);
    const events = await eventsOf(app, created.id);
    assert.deepEqual(
      events.map((e) => [e.type, e.previous_status, e.status, e.sequence]),
      [
        ['order.created', null, 'pending', 1],
        ['order.status_changed', 'pending', 'processing', 2],
        ['order.status_changed', 'processing', 'completed', 3],
      ],
    );
    assert.equal(events[2]?.total_amount, '0.60');
  });

  it('422 for missing fields and wrong types, with nothing stored', async () => {
    const before = await orderCount();
    for (const payload of [
      {},
      { shipping_address: 'x' },
      { items: [{ product_id: pen.id, quantity: 1 }] },
      { items: [], shipping_address: 'x' },
      { items: Array.from({ length: 101 }, () => ({ product_id: pen.id, quantity: 1 })), shipping_address: 'x' },
      { items: [{ product_id: pen.id }], shipping_address: 'x' },
      { items: [{ quantity: 1 }], shipping_address: 'x' },
      { items: [{ product_id: pen.id, quantity: '2' }], shipping_address: 'x' },
      { items: [{ product_id: pen.id, quantity: 1.5 }], shipping_address: 'x' },
      { items: [{ product_id: 'abc', quantity: 1 }], shipping_address: 'x' },
      { items: [{ product_id: pen.id, quantity: 1 }], shipping_address: '' },
      { items: [{ product_id: pen.id, quantity: 1 }], shipping_address: 'x'.repeat(501) },
      { items: [{ product_id: pen.id, quantity: 1 }], shipping_address: 42 },
      { items: [{ product_id: pen.id, quantity: 1 }], shipping_address: 'x', coupon: 'FREE' },
      { items: [{ product_id: pen.id, quantity: 1, price: 0 }], shipping_address: 'x' },
      { items: 'pen', shipping_address: 'x' },
    ]) {
      const res = await place(alice, payload);
      assert.equal(res.statusCode, 422, `${JSON.stringify(payload).slice(0, 100)} → ${res.body}`);
      assert.equal(errorBody(res).error_code, 'VALIDATION_ERROR');
    }
    const malformed = await api(app, alice, { method: 'POST', url: '/api/v1/orders', payload: '{"items": [', headers: { 'content-type': 'application/json' } });
    assert.equal(malformed.statusCode, 422);
    assert.equal(await orderCount(), before);
  });

  it('400 INVALID_PRODUCT for an unknown or inactive product; 400 INVALID_QUANTITY outside 1–1000', async () => {
    const inactive = await createProduct(app, { active: false });
    const before = await orderCount();
    for (const productId of [999999, inactive.id, 0, -1, 99999999999]) {
      const res = await place(alice, { items: [{ product_id: pen.id, quantity: 1 }, { product_id: productId, quantity: 1 }], shipping_address: 'x' });
      assert.equal(res.statusCode, 400, `${productId} → ${res.body}`);
      assert.deepEqual(errorBody(res), { error_code: 'INVALID_PRODUCT', detail: `Invalid product id ${productId}: no such active product` });
    }
    // two bad lines: the first is named, whether its id is in the integer range or not
    for (const [first, second] of [
      [inactive.id, 99999999999],
      [99999999999, inactive.id],
      [999999, inactive.id],
    ]) {
      const res = await place(alice, { items: [{ product_id: pen.id, quantity: 1 }, { product_id: first!, quantity: 1 }, { product_id: second!, quantity: 2 }], shipping_address: 'x' });
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(errorBody(res).detail, `Invalid product id ${first}: no such active product`);
    }
    for (const quantity of [0, -3, 1001, 5000]) {
      const res = await place(alice, { items: [{ product_id: pen.id, quantity }], shipping_address: 'x' });
      assert.equal(res.statusCode, 400, `${quantity} → ${res.body}`);
      assert.equal(errorBody(res).error_code, 'INVALID_QUANTITY');
    }
    assert.equal(await orderCount(), before);
    const edge = await place(alice, { items: [{ product_id: pen.id, quantity: 1000 }], shipping_address: 'x'.repeat(500) });
    assert.equal(edge.statusCode, 201);
    // the line has its product's name from the moment the order exists
    const line = await app.ctx.db.selectFrom('order_items').select('product_name').where('order_id', '=', edge.json().id).executeTakeFirstOrThrow();
    assert.equal(line.product_name, pen.name);
    await waitForFinal(app, edge.json().id);
  });

  it('401 without a token, 403 for an inactive user', async () => {
    const none = await app.inject({ method: 'POST', url: '/api/v1/orders', payload: { items: [{ product_id: pen.id, quantity: 1 }], shipping_address: 'x' } });
    assert.equal(none.statusCode, 401);
    const carol = await createUser(app, { active: false });
    const inactive = await place(carol, { items: [{ product_id: pen.id, quantity: 1 }], shipping_address: 'x' });
    assert.equal(inactive.statusCode, 403);
    for (const url of ['/api/v1/orders', '/api/v1/orders/1']) {
      assert.equal((await app.inject({ method: 'GET', url })).statusCode, 401);
    }
  });

  describe('Idempotency-Key', () => {
    const payload = () => ({ items: [{ product_id: pen.id, quantity: 2 }], shipping_address: 'Idempotent Rd 1' });

    it('the same key and body replays the first response and creates one order', async () => {
      const before = await orderCount();
      const first = await place(alice, payload(), { 'idempotency-key': 'key-replay' });
      assert.equal(first.statusCode, 201);
      const second = await place(alice, payload(), { 'idempotency-key': 'key-replay' });
      assert.equal(second.statusCode, 201);
      assert.deepEqual(second.json(), first.json());
      assert.equal(second.headers['idempotent-replayed'], 'true');
      assert.equal(await orderCount(), before + 1);
      await waitForFinal(app, first.json().id);
      const third = await place(alice, payload(), { 'idempotency-key': 'key-replay' });
      assert.deepEqual(third.json(), first.json(), 'the first response, even after processing');
    });

    it('the same key with a different body is 422 IDEMPOTENCY_KEY_REUSED', async () => {
      const first = await place(alice, payload(), { 'idempotency-key': 'key-mismatch' });
      assert.equal(first.statusCode, 201);
      const before = await orderCount();
      const other = await place(alice, { ...payload(), shipping_address: 'Elsewhere 2' }, { 'idempotency-key': 'key-mismatch' });
      assert.equal(other.statusCode, 422);
      assert.equal(errorBody(other).error_code, 'IDEMPOTENCY_KEY_REUSED');
      assert.equal(await orderCount(), before);
    });

    it('keys are per user', async () => {
      const a = await place(alice, payload(), { 'idempotency-key': 'shared-key' });
      const b = await place(bob, payload(), { 'idempotency-key': 'shared-key' });
      assert.equal(b.statusCode, 201);
      assert.notEqual(a.json().id, b.json().id);
      assert.equal(b.json().user_id, bob.user.id);
    });

    it('concurrent requests with one key create exactly one order', async () => {
      const before = await orderCount();
      const results = await Promise.all(Array.from({ length: 8 }, () => place(alice, payload(), { 'idempotency-key': 'key-concurrent' })));
      assert.ok(results.every((r) => r.statusCode === 201), results.map((r) => r.body).join('\n'));
      assert.equal(new Set(results.map((r) => r.json().id)).size, 1);
      assert.equal(await orderCount(), before + 1);
    });

    it('an expired key is forgotten; a key over 255 characters is 422', async () => {
      const first = await place(alice, payload(), { 'idempotency-key': 'key-expired' });
      await app.ctx.db
        .updateTable('idempotency_keys')
        .set({ expires_at: new Date(Date.now() - 1000) })
        .where('key', '=', 'key-expired')
        .execute();
      const again = await place(alice, { ...payload(), shipping_address: 'New body is fine now' }, { 'idempotency-key': 'key-expired' });
      assert.equal(again.statusCode, 201);
      assert.notEqual(again.json().id, first.json().id);
      const long = await place(alice, payload(), { 'idempotency-key': 'k'.repeat(256) });
      assert.equal(long.statusCode, 422);
      const max = await place(alice, payload(), { 'idempotency-key': 'k'.repeat(255) });
      assert.equal(max.statusCode, 201);
    });
  });

  describe('GET /orders', () => {
    it("lists only the caller's orders, newest first, paginated, with exactly the summary fields", async () => {
      const dave = await createUser(app);
      const ids: number[] = [];
      for (let i = 0; i < 3; i++) {
        ids.push((await place(dave, { items: [{ product_id: pen.id, quantity: 1 }], shipping_address: `D ${i}` })).json().id);
      }
      await place(bob, { items: [{ product_id: pen.id, quantity: 1 }], shipping_address: 'not dave' });
      const res = await api(app, dave, { method: 'GET', url: '/api/v1/orders' });
      assert.equal(res.statusCode, 200);
      const body = res.json();
      assert.deepEqual(Object.keys(body).sort(), ['has_next', 'items', 'page', 'page_size', 'total']);
      assert.equal(body.total, 3);
      assert.equal(body.page, 1);
      assert.equal(body.page_size, 20);
      assert.equal(body.has_next, false);
      assert.deepEqual(body.items.map((o: { id: number }) => o.id), [...ids].reverse());
      assert.deepEqual(Object.keys(body.items[0]).sort(), SUMMARY_FIELDS);
      assert.ok(body.items.every((o: { user_id: number }) => o.user_id === dave.user.id));

      const page2 = await api(app, dave, { method: 'GET', url: '/api/v1/orders?page=2&page_size=2' });
      assert.deepEqual(page2.json().items.map((o: { id: number }) => o.id), [ids[0]]);
      assert.equal(page2.json().has_next, false);
      assert.equal(page2.json().total, 3);
      // past the end no row carries the count, which is then asked for on its own
      const past = await api(app, dave, { method: 'GET', url: '/api/v1/orders?page=3&page_size=2' });
      assert.deepEqual([past.json().items, past.json().total, past.json().has_next], [[], 3, false]);
      const page1 = await api(app, dave, { method: 'GET', url: '/api/v1/orders?page=1&page_size=2' });
      assert.equal(page1.json().has_next, true);
      for (const id of ids) await waitForFinal(app, id);
    });

    it('filters by status; an unknown status or page_size over 100 is 422', async () => {
      const erin = await createUser(app);
      const scarce = await createProduct(app, { stock: 1 });
      const ok = (await place(erin, { items: [{ product_id: pen.id, quantity: 1 }], shipping_address: 'x' })).json();
      const bad = (await place(erin, { items: [{ product_id: scarce.id, quantity: 2 }], shipping_address: 'x' })).json();
      await waitForFinal(app, ok.id);
      await waitForFinal(app, bad.id);
      const completed = await api(app, erin, { method: 'GET', url: '/api/v1/orders?status=completed' });
      assert.deepEqual(completed.json().items.map((o: { id: number }) => o.id), [ok.id]);
      assert.equal(completed.json().total, 1);
      const failed = await api(app, erin, { method: 'GET', url: '/api/v1/orders?status=failed' });
      assert.deepEqual(failed.json().items.map((o: { id: number }) => o.id), [bad.id]);
      assert.equal(failed.json().total, 1);
      const pending = await api(app, erin, { method: 'GET', url: '/api/v1/orders?status=pending' });
      assert.deepEqual(pending.json().items, []);
      assert.equal(pending.json().total, 0);
      for (const q of ['status=shipped', 'page_size=101', 'page=0']) {
        const res = await api(app, erin, { method: 'GET', url: `/api/v1/orders?${q}` });
        assert.equal(res.statusCode, 422, q);
        assert.equal(errorBody(res).error_code, 'VALIDATION_ERROR');
      }
    });
  });

  describe('GET /orders/{order_id}', () => {
    it("403 for another user's order (an admin's too), 404 for none or an id no row can have, 422 for a bad id", async () => {
      const order = (await place(alice, { items: [{ product_id: pen.id, quantity: 1 }], shipping_address: 'Private 1' })).json();
      const other = await api(app, bob, { method: 'GET', url: `/api/v1/orders/${order.id}` });
      assert.equal(other.statusCode, 403);
      assert.equal(errorBody(other).error_code, 'FORBIDDEN');
      assert.ok(!other.body.includes('Private 1'));
      const missing = await api(app, alice, { method: 'GET', url: '/api/v1/orders/999999' });
      assert.equal(missing.statusCode, 404);
      assert.deepEqual(errorBody(missing), { detail: 'Order not found', error_code: 'NOT_FOUND' });
      for (const id of ['0', '-1', '2147483648', '99999999999999999999']) {
        const none = await api(app, alice, { method: 'GET', url: `/api/v1/orders/${id}` });
        assert.equal(none.statusCode, 404, id);
        assert.deepEqual(errorBody(none), { detail: 'Order not found', error_code: 'NOT_FOUND' });
      }
      for (const id of ['abc', '1.5', '1e3x']) {
        const bad = await api(app, alice, { method: 'GET', url: `/api/v1/orders/${id}` });
        assert.equal(bad.statusCode, 422, id);
        assert.equal(errorBody(bad).error_code, 'VALIDATION_ERROR');
      }
      // the specification's permission matrix: "Read order | owner"
      const asAdmin = await api(app, admin, { method: 'GET', url: `/api/v1/orders/${order.id}` });
      assert.equal(asAdmin.statusCode, 403);
      assert.equal(errorBody(asAdmin).error_code, 'FORBIDDEN');
    });

    it('a pending order shows the current product name and zero prices', async () => {
      // processed or not, the read always has a product_name string
      const order = (await place(alice, { items: [{ product_id: pen.id, quantity: 1 }], shipping_address: 'x' })).json();
      const res = await api(app, alice, { method: 'GET', url: `/api/v1/orders/${order.id}` });
      assert.equal(res.statusCode, 200);
      assert.equal(res.json().items[0].product_name, 'Pen');
      await waitForFinal(app, order.id);
    });
  });

  describe('POST /orders/{order_id}/retry', () => {
    it('re-queues a failed order: 202 action shape, pending, then processed again', async () => {
      const scarce = await createProduct(app, { stock: 1, price: '2.50' });
      const order = (await place(alice, { items: [{ product_id: scarce.id, quantity: 4 }], shipping_address: 'x' })).json();
      const failed = await waitForFinal(app, order.id);
      assert.equal(failed.status, 'failed');
      assert.equal(failed.failure_reason, 'INSUFFICIENT_STOCK');
      assert.equal(await stockOf(app, scarce.id), 1, 'nothing reserved for a failed order');

      await app.ctx.db.updateTable('products').set({ stock: 10 }).where('id', '=', scarce.id).execute();
      const res = await api(app, alice, { method: 'POST', url: `/api/v1/orders/${order.id}/retry` });
      assert.equal(res.statusCode, 202, res.body);
      assert.deepEqual(Object.keys(res.json()).sort(), ['message', 'order_id', 'status']);
      assert.equal(res.json().status, 'queued');
      assert.equal(res.json().order_id, order.id);
      const done = await waitForFinal(app, order.id);
      assert.equal(done.status, 'completed');
      assert.equal(done.total_amount, '10.00');
      assert.equal(done.failure_reason, null);
      assert.equal(await stockOf(app, scarce.id), 6);
      const statuses = (await eventsOf(app, order.id)).map((e) => `${e.previous_status}->${e.status}`);
      assert.deepEqual(statuses, ['null->pending', 'pending->processing', 'processing->failed', 'failed->pending', 'pending->processing', 'processing->completed']);
    });

    it('400 INVALID_STATE unless failed; 403 for another user; admins may retry; 404 unknown', async () => {
      const order = (await place(alice, { items: [{ product_id: pen.id, quantity: 1 }], shipping_address: 'x' })).json();
      await waitForFinal(app, order.id);
      const notFailed = await api(app, alice, { method: 'POST', url: `/api/v1/orders/${order.id}/retry` });
      assert.equal(notFailed.statusCode, 400);
      assert.equal(errorBody(notFailed).error_code, 'INVALID_STATE');

      const scarce = await createProduct(app, { stock: 0 });
      const failing = (await place(alice, { items: [{ product_id: scarce.id, quantity: 1 }], shipping_address: 'x' })).json();
      assert.equal((await waitForFinal(app, failing.id)).status, 'failed');
      const other = await api(app, bob, { method: 'POST', url: `/api/v1/orders/${failing.id}/retry` });
      assert.equal(other.statusCode, 403);
      assert.equal((await app.ctx.db.selectFrom('orders').select('status').where('id', '=', failing.id).executeTakeFirstOrThrow()).status, 'failed');
      const byAdmin = await api(app, admin, { method: 'POST', url: `/api/v1/orders/${failing.id}/retry` });
      assert.equal(byAdmin.statusCode, 202);
      assert.equal((await waitForFinal(app, failing.id)).status, 'failed');
      const missing = await api(app, alice, { method: 'POST', url: '/api/v1/orders/999999/retry' });
      assert.equal(missing.statusCode, 404);
    });
  });
});
