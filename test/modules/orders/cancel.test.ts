import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { ProductRow } from '../../../src/modules/products/products.tables.ts';
import { api, buildTestApp, createUser, errorBody, type TestUser } from '../../helpers/app.ts';
import { createProduct, stockOf } from '../../helpers/products.ts';
import { eventsOf, processorFor, waitForFinal } from '../../helpers/orders.ts';
import { cancel, pendingOrder, statusOf, stringsIn } from './cancel.helpers.ts';

interface V2Order {
  id: number;
  status: string;
  failure_reason: string | null;
  cancelled_at: string | null;
  items: { product_id: number; quantity: number }[];
}

describe('POST /api/v2/orders/{order_id}/cancel', () => {
  let app: FastifyInstance;
  let alice: TestUser;
  let bob: TestUser;
  let admin: TestUser;
  let product: ProductRow;
  let scarce: ProductRow;

  /** an order placed through the API and processed by the app's worker */
  const placed = async (who: TestUser, productId: number, quantity: number) => {
    const res = await api(app, who, { method: 'POST', url: '/api/v1/orders', payload: { items: [{ product_id: productId, quantity }], shipping_address: '1 Main St' } });
    assert.equal(res.statusCode, 201, res.body);
    return waitForFinal(app, res.json<{ id: number }>().id);
  };

  before(async () => {
    app = await buildTestApp(undefined);
    alice = await createUser(app);
    bob = await createUser(app);
    admin = await createUser(app, { admin: true });
    product = await createProduct(app, { stock: 1000 });
    scarce = await createProduct(app, { stock: 1 });
  });
  after(() => app.close());

  it('cancels a pending order: 200 with the v2 read, the next event with the reason, and its processing never reserves', async () => {
    const before = await stockOf(app, product.id);
    const order = await pendingOrder(app, alice, [{ productId: product.id, quantity: 3 }]);
    const res = await cancel(app, alice, order.id, { reason: 'ordered by mistake' });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json<V2Order>();
    assert.equal(body.status, 'cancelled');
    assert.equal(body.failure_reason, null);
    assert.ok(body.cancelled_at && !Number.isNaN(Date.parse(body.cancelled_at)));
    assert.deepEqual(body.items.map((i) => [i.product_id, i.quantity]), [[product.id, 3]]);

    // the job that was on its way finds it cancelled: nothing priced, nothing reserved
    assert.equal(await processorFor(app, {}).process(order.id), 'cancelled');
    assert.equal(await stockOf(app, product.id), before);
    assert.deepEqual(
      (await eventsOf(app, order.id)).map((e) => [e.sequence, e.type, e.previous_status, e.status]),
      [
        [1, 'order.created', null, 'pending'],
        [2, 'order.status_changed', 'pending', 'cancelled'],
      ],
    );
    const events = await api(app, alice, { method: 'GET', url: `/api/v2/orders/${order.id}/events` });
    assert.equal(events.json<{ reason: string | null }[]>()[1].reason, 'ordered by mistake');
  });

  it('cancels a processing order: the reservation that follows re-reads the status under the row lock and takes nothing', async () => {
    const before = await stockOf(app, product.id);
    const order = await pendingOrder(app, alice, [{ productId: product.id, quantity: 4 }]);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let reached!: () => void;
    const atGate = new Promise<void>((r) => (reached = r));
    const processing = processorFor(app, {
      beforeReserve: async () => {
        reached();
        await gate;
      },
    }).process(order.id);
    await atGate;
    assert.equal(await statusOf(app, order.id), 'processing');
    const res = await cancel(app, alice, order.id);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json<V2Order>().status, 'cancelled');
    release();
    assert.equal(await processing, 'cancelled');
    assert.equal(await stockOf(app, product.id), before);
    assert.deepEqual(
      (await eventsOf(app, order.id)).map((e) => e.status),
      ['pending', 'processing', 'cancelled'],
    );
  });

  it('cancels a completed order and releases the stock of every line in the same transaction', async () => {
    const other = await createProduct(app, { stock: 50 });
    const beforeProduct = await stockOf(app, product.id);
    const res0 = await api(app, alice, {
      method: 'POST',
      url: '/api/v1/orders',
      payload: { items: [{ product_id: product.id, quantity: 2 }, { product_id: other.id, quantity: 5 }, { product_id: other.id, quantity: 1 }], shipping_address: '1 Main St' },
    });
    assert.equal(res0.statusCode, 201, res0.body);
    const done = await waitForFinal(app, res0.json<{ id: number }>().id);
    assert.equal(done.status, 'completed');
    assert.equal(await stockOf(app, other.id), 44);
    const res = await cancel(app, alice, done.id, { reason: 'changed my mind' });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(await stockOf(app, other.id), 50);
    assert.equal(await stockOf(app, product.id), beforeProduct);
    const last = (await eventsOf(app, done.id)).at(-1)!;
    assert.deepEqual([last.previous_status, last.status], ['completed', 'cancelled']);
  });

  it('refuses a failed or already cancelled order with 400 ORDER_NOT_CANCELLABLE, changing nothing', async () => {
    const failed = await placed(alice, scarce.id, 5);
    assert.equal(failed.status, 'failed');
    const res = await cancel(app, alice, failed.id);
    assert.equal(res.statusCode, 400);
    assert.equal(errorBody(res).error_code, 'ORDER_NOT_CANCELLABLE');
    assert.equal(await statusOf(app, failed.id), 'failed');

    const done = await placed(alice, product.id, 1);
    assert.equal((await cancel(app, alice, done.id)).statusCode, 200);
    const stock = await stockOf(app, product.id);
    const again = await cancel(app, alice, done.id);
    assert.equal(again.statusCode, 400);
    assert.equal(errorBody(again).error_code, 'ORDER_NOT_CANCELLABLE');
    // released once only
    assert.equal(await stockOf(app, product.id), stock);
    assert.equal((await eventsOf(app, done.id)).filter((e) => e.status === 'cancelled').length, 1);
  });

  it('is for the owner or an administrator: another user 403, an unknown order 404, no token 401', async () => {
    const order = await pendingOrder(app, alice, [{ productId: product.id, quantity: 1 }]);
    const res = await cancel(app, bob, order.id);
    assert.equal(res.statusCode, 403);
    assert.equal(errorBody(res).error_code, 'FORBIDDEN');
    assert.equal(await statusOf(app, order.id), 'pending');
    assert.equal((await cancel(app, null, order.id)).statusCode, 401);
    assert.equal(errorBody(await cancel(app, alice, 2147483000)).error_code, 'NOT_FOUND');
    const byAdmin = await cancel(app, admin, order.id);
    assert.equal(byAdmin.statusCode, 200, byAdmin.body);
  });

  it('validates the body: reason up to 500 characters, nothing else', async () => {
    const order = await pendingOrder(app, alice, [{ productId: product.id, quantity: 1 }]);
    for (const payload of [{ reason: 'x'.repeat(501) }, { reason: 5 }, { why: 'no' }]) {
      const res = await cancel(app, alice, order.id, payload);
      assert.equal(res.statusCode, 422, JSON.stringify(payload));
      assert.equal(errorBody(res).error_code, 'VALIDATION_ERROR');
    }
    assert.equal(await statusOf(app, order.id), 'pending');
    assert.equal((await cancel(app, alice, order.id, { reason: 'x'.repeat(500) })).statusCode, 200);
  });

  it('v2 reads show cancelled, failure_reason and cancelled_at; the status filter takes cancelled', async () => {
    const carol = await createUser(app);
    const c = await pendingOrder(app, carol, [{ productId: product.id, quantity: 1 }]);
    await cancel(app, carol, c.id);
    const f = await placed(carol, scarce.id, 9);
    const list = await api(app, carol, { method: 'GET', url: '/api/v2/orders' });
    assert.equal(list.statusCode, 200);
    const items = list.json<{ items: V2Order[] }>().items;
    assert.deepEqual(items.map((o) => [o.id, o.status, o.failure_reason, o.cancelled_at !== null]), [
      [f.id, 'failed', 'INSUFFICIENT_STOCK', false],
      [c.id, 'cancelled', null, true],
    ]);
    const cancelled = await api(app, carol, { method: 'GET', url: '/api/v2/orders?status=cancelled' });
    assert.deepEqual(cancelled.json<{ items: V2Order[] }>().items.map((o) => o.id), [c.id]);
    const failedOnly = await api(app, carol, { method: 'GET', url: '/api/v2/orders?status=failed' });
    assert.deepEqual(failedOnly.json<{ items: V2Order[] }>().items.map((o) => o.id), [f.id]);
    const admins = await api(app, admin, { method: 'GET', url: `/api/v2/admin/orders?status=cancelled&user_id=${carol.user.id}` });
    assert.deepEqual(admins.json<{ items: V2Order[] }>().items.map((o) => [o.id, o.status]), [[c.id, 'cancelled']]);
  });

  it("v1's administrators' list with status=failed merges failed and cancelled orders newest first, page by page", async () => {
    const erin = await createUser(app);
    const mixed: number[] = [];
    for (let i = 0; i < 3; i++) {
      mixed.push((await placed(erin, scarce.id, 5)).id); // more than the stock: failed
      const c = await pendingOrder(app, erin, [{ productId: product.id, quantity: 1 }]);
      assert.equal((await cancel(app, erin, c.id)).statusCode, 200);
      mixed.push(c.id);
    }
    await placed(erin, product.id, 1);
    const newestFirst = mixed.reverse();
    const page = async (query: string) => {
      const res = await api(app, admin, { method: 'GET', url: `/api/v1/admin/orders?status=failed&page_size=2&${query}` });
      assert.equal(res.statusCode, 200, res.body);
      return res.json<{ items: { id: number; status: string }[]; total: number }>();
    };
    const pages = await Promise.all([1, 2, 3, 4].map((n) => page(`user_id=${erin.user.id}&page=${n}`)));
    assert.deepEqual(pages.map((p) => p.items.map((o) => o.id)), [newestFirst.slice(0, 2), newestFirst.slice(2, 4), newestFirst.slice(4, 6), []]);
    assert.ok(pages.every((p) => p.total === 6 && p.items.every((o) => o.status === 'failed')));
    // over every user: erin's orders are the newest failed and cancelled ones
    assert.deepEqual((await page('page=2')).items.map((o) => o.id), newestFirst.slice(2, 4));
  });

  it('v1 has no cancel route, reads a cancelled order as failed, matches it with status=failed, and never says cancelled', async () => {
    const dave = await createUser(app);
    const p = await pendingOrder(app, dave, [{ productId: product.id, quantity: 1 }]);
    const viaV1 = await api(app, dave, { method: 'POST', url: `/api/v1/orders/${p.id}/cancel`, payload: {} });
    assert.equal(viaV1.statusCode, 404);
    assert.equal(await statusOf(app, p.id), 'pending');
    await cancel(app, dave, p.id, { reason: 'cancelled by the customer' });
    const done = await placed(dave, product.id, 2);
    await cancel(app, dave, done.id);
    const kept = await placed(dave, product.id, 1);

    const urls = [
      '/api/v1/orders',
      '/api/v1/orders?status=failed',
      '/api/v1/orders?status=completed',
      ...[p.id, done.id, kept.id].flatMap((id) => [`/api/v1/orders/${id}`, `/api/v1/orders/${id}/events`]),
    ];
    const adminUrls = [
      `/api/v1/admin/orders?user_id=${dave.user.id}`,
      `/api/v1/admin/orders?user_id=${dave.user.id}&status=failed`,
      ...[p.id, done.id].flatMap((id) => [`/api/v1/admin/orders/${id}`, `/api/v1/admin/orders/${id}/trace`]),
    ];
    const responses = [
      ...(await Promise.all(urls.map(async (url) => ({ url, res: await api(app, dave, { method: 'GET', url }) })))),
      ...(await Promise.all(adminUrls.map(async (url) => ({ url, res: await api(app, admin, { method: 'GET', url }) })))),
      { url: 'retry', res: await api(app, dave, { method: 'POST', url: `/api/v1/orders/${p.id}/retry` }) },
    ];
    for (const { url, res } of responses) {
      assert.ok(res.statusCode === 200 || url === 'retry', `${url}: ${res.statusCode} ${res.body}`);
      // the status word, wherever a string could carry it (v1's failure reason for such an order is `CANCELLED`)
      assert.deepEqual(stringsIn(res.json()).filter((s) => s.value.includes('cancelled')), [], url);
      assert.doesNotMatch(res.body, /"cancelled_at"|"cancelled"/, url);
    }
    const get = (url: string) => responses.find((r) => r.url === url)!.res.json<Record<string, unknown>>();
    assert.equal(get(`/api/v1/orders/${p.id}`).status, 'failed');
    assert.equal('cancelled_at' in get(`/api/v1/orders/${p.id}`), false);
    assert.equal('failure_reason' in get(`/api/v1/orders/${p.id}`), false);
    const failedIds = (get('/api/v1/orders?status=failed').items as { id: number }[]).map((o) => o.id);
    assert.deepEqual(failedIds, [done.id, p.id]);
    assert.deepEqual((get('/api/v1/orders?status=completed').items as { id: number }[]).map((o) => o.id), [kept.id]);
    assert.equal(get(`/api/v1/admin/orders/${done.id}`).failure_reason, 'CANCELLED');
    assert.deepEqual((get(`/api/v1/orders/${done.id}/events`) as unknown as { previous_status: string; status: string; reason: string }[]).at(-1), {
      ...(get(`/api/v1/orders/${done.id}/events`) as unknown as object[]).at(-1),
      previous_status: 'completed',
      status: 'failed',
      reason: 'CANCELLED',
    });
    const retry = responses.find((r) => r.url === 'retry')!.res;
    assert.equal(retry.statusCode, 400);
    assert.equal(errorBody(retry).error_code, 'INVALID_STATE');
  });
});
