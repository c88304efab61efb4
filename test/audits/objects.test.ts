import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance, HTTPMethods } from 'fastify';
import { api, errorBody, type TestUser, buildTestApp, createUser, snapshot } from '../helpers/app.ts';
import { waitForFinal, waitForPublished } from '../helpers/orders.ts';
import { createProduct } from '../helpers/products.ts';

interface Owned {
  orderId: number;
  failedOrderId: number;
  itemId: number;
  subscriptionId: number;
}

/** Creates an order (processed to completion), a failed order, an item and a subscription for `who`. */
async function ownStuff(app: FastifyInstance, who: TestUser, productId: number): Promise<Owned> {
  const order = (payload: object) => api(app, who, { method: 'POST', url: '/api/v1/orders', payload });
  const o1 = await order({ items: [{ product_id: productId, quantity: 1 }], shipping_address: `${who.email} street 1` });
  const o2 = await order({ items: [{ product_id: productId, quantity: 2 }], shipping_address: `${who.email} street 2` });
  assert.equal(o1.statusCode, 201, o1.body);
  const orderId = o1.json<{ id: number }>().id;
  const failedOrderId = o2.json<{ id: number }>().id;
  await waitForFinal(app, orderId);
  await waitForFinal(app, failedOrderId);
  await app.ctx.db.updateTable('orders').set({ status: 'failed', failure_reason: 'PROCESSING_ERROR' }).where('id', '=', failedOrderId).execute();
  // the subscription below gets no message of these orders, and so no delivery that runs during the test
  await waitForPublished(app);
  const item = await api(app, who, { method: 'POST', url: '/api/v1/items', payload: { name: `${who.email} item`, price: 5 } });
  const sub = await api(app, who, {
    method: 'POST',
    url: '/api/v1/webhooks/subscriptions',
    payload: { url: 'https://hooks.example.com/owned', events: ['order.status_changed'] },
  });
  assert.equal(sub.statusCode, 201, sub.body);
  return { orderId, failedOrderId, itemId: item.json<{ id: number }>().id, subscriptionId: sub.json<{ id: number }>().id };
}

describe('object-level authorisation', () => {
  let app: FastifyInstance;
  let alice: TestUser;
  let bob: TestUser;
  let bobs: Owned;
  let alices: Owned;
  before(async () => {
    app = await buildTestApp(undefined);
    alice = await createUser(app, { login: false });
    bob = await createUser(app, { login: false });
    const product = await createProduct(app, { stock: 1000 });
    bobs = await ownStuff(app, bob, product.id);
    alices = await ownStuff(app, alice, product.id);
  });
  after(() => app.close());

  it("every operation on another user's order, item, subscription and its deliveries is 403; rows unchanged", async () => {
    const before = await snapshot(app);
    const attacks: [HTTPMethods, string, unknown?][] = [
      ['GET', `/api/v1/orders/${bobs.orderId}`],
      ['POST', `/api/v1/orders/${bobs.failedOrderId}/retry`],
      ['GET', `/api/v1/items/${bobs.itemId}`],
      ['PATCH', `/api/v1/items/${bobs.itemId}`, { name: 'stolen', price: 0.01, is_active: false }],
      ['DELETE', `/api/v1/items/${bobs.itemId}`],
      ['GET', `/api/v1/webhooks/subscriptions/${bobs.subscriptionId}`],
      ['PATCH', `/api/v1/webhooks/subscriptions/${bobs.subscriptionId}`, { url: 'https://attacker.example.com/steal' }],
      ['DELETE', `/api/v1/webhooks/subscriptions/${bobs.subscriptionId}`],
      ['GET', `/api/v1/webhooks/subscriptions/${bobs.subscriptionId}/deliveries`],
      ['POST', `/api/v1/webhooks/subscriptions/${bobs.subscriptionId}/test`],
      ['POST', `/api/v1/webhooks/subscriptions/${bobs.subscriptionId}/rotate-secret`],
      ['PATCH', `/api/v1/users/${bob.user.id}`, { full_name: 'Hijacked', email: 'hijacked@example.com' }],
    ];
    for (const [method, url, payload] of attacks) {
      const res = await api(app, alice, { method, url, payload: payload as object | undefined });
      assert.equal(res.statusCode, 403, `${method} ${url}: ${res.statusCode} ${res.body}`);
      assert.equal(errorBody(res).error_code, 'FORBIDDEN');
      assert.ok(!res.body.includes(bob.email), `${method} ${url} leaks nothing of the row`);
    }
    assert.equal(await snapshot(app), before);
    // the owner still can: the 403s were about ownership, not broken routes
    assert.equal((await api(app, bob, { method: 'GET', url: `/api/v1/orders/${bobs.orderId}` })).statusCode, 200);
    assert.equal((await api(app, bob, { method: 'GET', url: `/api/v1/items/${bobs.itemId}` })).statusCode, 200);
    assert.equal((await api(app, bob, { method: 'GET', url: `/api/v1/webhooks/subscriptions/${bobs.subscriptionId}/deliveries` })).statusCode, 200);
  });

  it('ids that do not exist are 404, for owners and others alike', async () => {
    for (const url of ['/api/v1/orders/999999', '/api/v1/items/999999', '/api/v1/webhooks/subscriptions/999999', '/api/v1/webhooks/subscriptions/999999/deliveries']) {
      const res = await api(app, alice, { method: 'GET', url });
      assert.equal(res.statusCode, 404, url);
    }
  });

  it("list routes never show another user's rows, whatever the query", async () => {
    const queries = ['', '?page_size=100', `?user_id=${bob.user.id}`, `?user_id=${bob.user.id}&page=1`, '?status=completed', '?status=failed', '?page=2&page_size=1', '?is_active=true', '?skip=0&limit=100'];
    for (const q of queries) {
      const orders = await api(app, alice, { method: 'GET', url: `/api/v1/orders${q}` });
      if (orders.statusCode === 200) {
        const body = orders.json<{ items: { id: number; user_id: number }[]; total: number }>();
        assert.ok(body.items.every((o) => o.user_id === alice.user.id), `orders${q}`);
        assert.ok(!body.items.some((o) => o.id === bobs.orderId || o.id === bobs.failedOrderId), `orders${q}`);
        assert.ok(body.total <= 2, `orders${q}: total counts only the caller's rows`);
      } else assert.equal(orders.statusCode, 422, `orders${q}`);

      const items = await api(app, alice, { method: 'GET', url: `/api/v1/items${q}` });
      if (items.statusCode === 200) {
        const list = items.json<{ id: number; user_id: number }[]>();
        assert.ok(list.every((i) => i.user_id === alice.user.id), `items${q}`);
        assert.ok(!list.some((i) => i.id === bobs.itemId), `items${q}`);
      } else assert.equal(items.statusCode, 422, `items${q}`);

      const subs = await api(app, alice, { method: 'GET', url: `/api/v1/webhooks/subscriptions${q}` });
      if (subs.statusCode === 200) {
        const body = subs.json<{ items: { id: number }[]; total: number }>();
        assert.deepEqual(body.items.map((s) => s.id).filter((id) => id === bobs.subscriptionId), [], `subscriptions${q}`);
        assert.ok(body.total <= 1, `subscriptions${q}`);
      } else assert.equal(subs.statusCode, 422, `subscriptions${q}`);
    }
    // and alice does see her own
    const own = await api(app, alice, { method: 'GET', url: '/api/v1/orders' });
    assert.deepEqual(own.json<{ items: { id: number }[] }>().items.map((o) => o.id).sort(), [alices.orderId, alices.failedOrderId].sort());
  });
});

describe('property-level authorisation', () => {
  let app: FastifyInstance;
  let admin: TestUser;
  let user: TestUser;
  let productId: number;
  let itemId: number;
  let subscriptionId: number;
  before(async () => {
    app = await buildTestApp(undefined);
    admin = await createUser(app, { login: false, admin: true });
    user = await createUser(app, { login: false });
    productId = (await createProduct(app)).id;
    itemId = (await api(app, user, { method: 'POST', url: '/api/v1/items', payload: { name: 'mine', price: 2 } })).json<{ id: number }>().id;
    subscriptionId = (
      await api(app, user, { method: 'POST', url: '/api/v1/webhooks/subscriptions', payload: { url: 'https://hooks.example.com/p', events: ['order.created'] } })
    ).json<{ id: number }>().id;
  });
  after(() => app.close());

  const line = () => ({ product_id: productId, quantity: 1 });

  it('protected properties in request bodies are rejected (422 or 403) and the database is unchanged', async () => {
    const before = await snapshot(app);
    const cases: [TestUser, HTTPMethods, string, Record<string, unknown>, number[]][] = [
      // orders: owner, state and money are the service's
      [user, 'POST', '/api/v1/orders', { items: [line()], shipping_address: 'a', user_id: admin.user.id }, [422]],
      [user, 'POST', '/api/v1/orders', { items: [line()], shipping_address: 'a', status: 'completed' }, [422]],
      [user, 'POST', '/api/v1/orders', { items: [line()], shipping_address: 'a', total_amount: 0.01 }, [422]],
      [user, 'POST', '/api/v1/orders', { items: [{ ...line(), unit_price: 0.01 }], shipping_address: 'a' }, [422]],
      [user, 'POST', '/api/v1/orders', { items: [line()], shipping_address: 'a', deleted_at: null }, [422]],
      // items
      [user, 'POST', '/api/v1/items', { name: 'n', price: 1, user_id: admin.user.id }, [422]],
      [user, 'POST', '/api/v1/items', { name: 'n', price: 1, deleted_at: '2020-01-01T00:00:00Z' }, [422]],
      [user, 'POST', '/api/v1/items', { name: 'n', price: 1, id: 1 }, [422]],
      [user, 'PATCH', `/api/v1/items/${itemId}`, { user_id: admin.user.id }, [400, 422]],
      [user, 'PATCH', `/api/v1/items/${itemId}`, { deleted_at: '2020-01-01T00:00:00Z' }, [400, 422]],
      // users: flags only by an admin, hashes and soft-delete never
      [user, 'PATCH', `/api/v1/users/${user.user.id}`, { is_admin: true }, [403]],
      [user, 'PATCH', `/api/v1/users/${user.user.id}`, { is_active: true }, [403]],
      [user, 'PATCH', `/api/v1/users/${user.user.id}`, { password_hash: '$2b$04$abcdefghijklmnopqrstuv' }, [422]],
      [user, 'PATCH', `/api/v1/users/${user.user.id}`, { deleted_at: null }, [422]],
      [user, 'PATCH', `/api/v1/users/${user.user.id}`, { password: 'new-password-1' }, [422]],
      [user, 'PATCH', `/api/v1/users/${user.user.id}`, { id: admin.user.id }, [422]],
      [admin, 'PATCH', `/api/v1/users/${admin.user.id}`, { is_admin: false }, [403]],
      [admin, 'POST', '/api/v1/users', { email: 'p1@example.com', full_name: 'p', password: 'password-1', is_admin: true }, [422]],
      [admin, 'POST', '/api/v1/users', { email: 'p2@example.com', full_name: 'p', password: 'password-1', is_active: false }, [422]],
      [admin, 'POST', '/api/v1/users', { email: 'p3@example.com', full_name: 'p', password: 'password-1', password_hash: 'x' }, [422]],
      [admin, 'POST', '/api/v1/users', { email: 'p4@example.com', full_name: 'p', password: 'password-1', deleted_at: null }, [422]],
      // subscriptions: owner and secret are the service's
      [user, 'POST', '/api/v1/webhooks/subscriptions', { url: 'https://hooks.example.com/q', events: ['order.created'], user_id: admin.user.id }, [422]],
      [user, 'POST', '/api/v1/webhooks/subscriptions', { url: 'https://hooks.example.com/q', events: ['order.created'], secret: 'whsec_mine' }, [422]],
      [user, 'PATCH', `/api/v1/webhooks/subscriptions/${subscriptionId}`, { user_id: admin.user.id }, [422]],
      [user, 'PATCH', `/api/v1/webhooks/subscriptions/${subscriptionId}`, { secret: 'whsec_mine' }, [422]],
      // products: admin-managed, but ids and timestamps are still the service's
      [admin, 'PATCH', `/api/v1/products/${productId}`, { id: 999 }, [422]],
      [admin, 'POST', '/api/v1/products', { sku: 'PX-1', name: 'p', price: 1, stock: 1, created_at: '2020-01-01T00:00:00Z' }, [422]],
      // prototype pollution shapes are plain unknown properties
      [user, 'POST', '/api/v1/items', JSON.parse('{"name":"n","price":1,"__proto__":{"is_admin":true}}') as Record<string, unknown>, [422]],
      [user, 'POST', '/api/v1/items', { name: 'n', price: 1, constructor: { prototype: { is_admin: true } } }, [422]],
    ];
    for (const [who, method, url, payload, statuses] of cases) {
      const res = await api(app, who, { method, url, payload });
      assert.ok(statuses.includes(res.statusCode), `${method} ${url} ${JSON.stringify(payload)}: ${res.statusCode} ${res.body}`);
      errorBody(res);
    }
    assert.equal(await snapshot(app), before);
    assert.equal(({} as Record<string, unknown>).is_admin, undefined, 'no prototype pollution');
  });
});
