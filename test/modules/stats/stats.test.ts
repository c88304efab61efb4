import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { ProductRow } from '../../../src/modules/products/products.tables.ts';
import { api, buildTestApp, createUser, errorBody, type TestUser } from '../../helpers/app.ts';
import { createProduct } from '../../helpers/products.ts';
import { waitForFinal } from '../../helpers/orders.ts';
import { cancel, pendingOrder } from '../orders/cancel.helpers.ts';

interface Stats {
  from: string;
  to: string;
  bucket: string;
  currency: string;
  orders: ({ start: string } & Record<'pending' | 'processing' | 'completed' | 'failed' | 'cancelled', number>)[];
  revenue: { start: string; amount: string }[];
  short_products: { product_id: number; sku: string; name: string; failed_orders: number }[];
  inbound_webhooks: { status: string; count: number }[];
  deliveries: { start: string; succeeded: number; failed: number }[];
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

describe('GET /api/v2/admin/stats', () => {
  let app: FastifyInstance;
  let admin: TestUser;
  let alice: TestUser;
  let plenty: ProductRow;
  let scarce: ProductRow;
  /**
   * the start of the current UTC hour when the data was written: the test's orders, webhooks and
   * attempts of "now" are dated there, so an hour that turns while the test runs changes nothing
   */
  let hourOfOrders: number;

  const stats = async (query = '') => {
    const res = await api(app, admin, { method: 'GET', url: `/api/v2/admin/stats${query}` });
    assert.equal(res.statusCode, 200, res.body);
    return res.json<Stats>();
  };

  const placed = async (lines: { product_id: number; quantity: number }[]) => {
    const res = await api(app, alice, { method: 'POST', url: '/api/v2/orders', payload: { items: lines, shipping_address: '1 Main St' } });
    assert.equal(res.statusCode, 201, res.body);
    return waitForFinal(app, res.json<{ id: number }>().id);
  };

  /** the bucket of `list` that starts at `start` */
  const at = <T extends { start: string }>(list: T[], start: number): T => {
    const found = list.find((b) => Date.parse(b.start) === start);
    assert.ok(found, `no bucket starts at ${new Date(start).toISOString()}`);
    return found;
  };

  before(async () => {
    app = await buildTestApp(undefined, { statsCacheSeconds: 0, currency: 'EUR' });
    admin = await createUser(app, { admin: true, login: false });
    alice = await createUser(app, { login: false });
    plenty = await createProduct(app, { sku: 'PLENTY-1', name: 'Plenty', price: '10.00', stock: 1000 });
    scarce = await createProduct(app, { sku: 'SCARCE-1', name: 'Scarce', price: '5.00', stock: 1 });

    // completed (20.00), completed then cancelled, failed twice with `scarce` short, and one still pending
    const done = await placed([{ product_id: plenty.id, quantity: 2 }]);
    assert.equal(done.status, 'completed');
    const undone = await placed([{ product_id: plenty.id, quantity: 1 }]);
    assert.equal((await cancel(app, alice, undone.id)).statusCode, 200);
    for (const lines of [[{ product_id: scarce.id, quantity: 5 }], [{ product_id: plenty.id, quantity: 1 }, { product_id: scarce.id, quantity: 3 }]]) {
      const failed = await placed(lines);
      assert.equal(failed.failure_reason, 'INSUFFICIENT_STOCK');
    }
    await pendingOrder(app, alice, [{ productId: plenty.id, quantity: 1 }]);
    hourOfOrders = Math.floor(Date.now() / HOUR) * HOUR;
    const now = hourOfOrders;
    await app.ctx.db.updateTable('orders').set({ created_at: new Date(now) }).execute();
    // one more completed order, created two days ago: in the days' chart, not in the hours'
    const old = await placed([{ product_id: plenty.id, quantity: 3 }]);
    await app.ctx.db.updateTable('orders').set({ created_at: new Date(now - 2 * DAY) }).where('id', '=', old.id).execute();

    // platform webhooks: two processed and one failed now, one processed three days ago
    const inbound = (status: 'processed' | 'failed', receivedAt: number, n: number) => ({
      webhook_id: `stats-test-${n}`,
      topic: 'orders/create',
      headers: '{}',
      raw_body: '{}',
      status,
      received_at: new Date(receivedAt),
    });
    await app.ctx.db
      .insertInto('inbound_webhooks')
      .values([inbound('processed', now, 1), inbound('processed', now, 2), inbound('failed', now, 3), inbound('processed', now - 3 * DAY, 4)])
      .execute();
    // delivery attempts: three succeeded and one failed now, one failed two hours ago
    const sub = await app.ctx.db
      .insertInto('webhook_subscriptions')
      .values({ user_id: admin.user.id, url: 'https://receiver.example/hook', events: ['order.created'], secret: 'whsec_test' })
      .returning('id')
      .executeTakeFirstOrThrow();
    const attempt = (success: boolean, createdAt: number, n: number) => ({
      subscription_id: sub.id,
      event_type: 'order.created',
      message_id: `msg_stats_${n}`,
      attempt: 1,
      success,
      created_at: new Date(createdAt),
    });
    await app.ctx.db
      .insertInto('webhook_deliveries')
      .values([attempt(true, now, 1), attempt(true, now, 2), attempt(true, now, 3), attempt(false, now, 4), attempt(false, now - 2 * HOUR, 5)])
      .execute();
  });

  it('answers 401 without a token, 403 to a non-administrator, and is not in v1', async () => {
    assert.equal((await api(app, null, { method: 'GET', url: '/api/v2/admin/stats' })).statusCode, 401);
    const res = await api(app, alice, { method: 'GET', url: '/api/v2/admin/stats' });
    assert.equal(res.statusCode, 403);
    assert.equal(errorBody(res).error_code, 'ADMIN_REQUIRED');
    assert.equal((await api(app, admin, { method: 'GET', url: '/api/v1/admin/stats' })).statusCode, 404);
  });

  it('by hour (the default): the last 24 hours in whole UTC hours, every one present, oldest first, zeros included', async () => {
    const before = Date.now();
    const s = await stats();
    assert.equal(s.bucket, 'hour');
    assert.equal(s.currency, 'EUR');
    const [from, to] = [Date.parse(s.from), Date.parse(s.to)];
    assert.equal(from % HOUR, 0);
    assert.equal(to % HOUR, 0);
    assert.ok(to >= before && to - before <= HOUR, `to ${s.to} is the end of the current hour`);
    assert.ok(to - from >= 24 * HOUR && to - from <= 25 * HOUR, `${s.from} – ${s.to}`);
    for (const list of [s.orders, s.revenue, s.deliveries]) {
      assert.deepEqual(
        list.map((b) => Date.parse(b.start)),
        Array.from({ length: (to - from) / HOUR }, (_, i) => from + i * HOUR),
      );
    }
    const { start: _, ...counts } = at(s.orders, hourOfOrders);
    assert.deepEqual(counts, { pending: 1, processing: 0, completed: 1, failed: 2, cancelled: 1 });
    assert.equal(at(s.revenue, hourOfOrders).amount, '20.00');
    const others = s.orders.filter((b) => Date.parse(b.start) !== hourOfOrders);
    assert.ok(others.every((b) => b.pending + b.processing + b.completed + b.failed + b.cancelled === 0));
    assert.ok(s.revenue.filter((b) => Date.parse(b.start) !== hourOfOrders).every((b) => b.amount === '0.00'));
    assert.deepEqual(s.short_products, [{ product_id: scarce.id, sku: 'SCARCE-1', name: 'Scarce', failed_orders: 2 }]);
    assert.deepEqual(s.inbound_webhooks, [
      { status: 'received', count: 0 },
      { status: 'processed', count: 2 },
      { status: 'failed', count: 1 },
    ]);
    const hourNow = hourOfOrders;
    assert.deepEqual(at(s.deliveries, hourNow), { start: new Date(hourNow).toISOString(), succeeded: 3, failed: 1 });
    assert.deepEqual(at(s.deliveries, hourNow - 2 * HOUR), { start: new Date(hourNow - 2 * HOUR).toISOString(), succeeded: 0, failed: 1 });
    assert.equal(s.deliveries.reduce((n, b) => n + b.succeeded + b.failed, 0), 5);
  });

  it('by day: the last 30 days in whole UTC days, the order of two days ago and the webhook of three among them', async () => {
    const s = await stats('?bucket=day');
    const [from, to] = [Date.parse(s.from), Date.parse(s.to)];
    assert.equal(from % DAY, 0);
    assert.ok(to - from >= 30 * DAY && to - from <= 31 * DAY);
    assert.equal(s.orders.length, (to - from) / DAY);
    const total = (key: 'completed' | 'failed' | 'cancelled' | 'pending') => s.orders.reduce((n, b) => n + b[key], 0);
    assert.deepEqual([total('completed'), total('failed'), total('cancelled'), total('pending')], [2, 2, 1, 1]);
    const twoDaysAgo = Math.floor((hourOfOrders - 2 * DAY) / DAY) * DAY;
    assert.equal(at(s.orders, twoDaysAgo).completed, 1);
    assert.equal(at(s.revenue, twoDaysAgo).amount, '30.00');
    assert.deepEqual(s.inbound_webhooks.find((w) => w.status === 'processed'), { status: 'processed', count: 3 });
  });

  it('takes from and to, widened to whole buckets', async () => {
    const s = await stats(`?from=${encodeURIComponent('2026-01-01T00:30:00+01:00')}&to=2026-01-01T05:10:00Z`);
    assert.deepEqual([s.from, s.to], ['2025-12-31T23:00:00.000Z', '2026-01-01T06:00:00.000Z']);
    assert.equal(s.orders.length, 7);
    assert.deepEqual(s.short_products, []);
    assert.ok(s.orders.every((b) => b.completed === 0) && s.deliveries.every((b) => b.succeeded + b.failed === 0));
    const day = await stats('?bucket=day&to=2026-01-31T00:00:00Z');
    assert.deepEqual([day.from, day.to, day.orders.length], ['2026-01-01T00:00:00.000Z', '2026-01-31T00:00:00.000Z', 30]);
  });

  it('422 VALIDATION_ERROR for from not before to, more than 744 buckets, an unknown bucket or a bad date', async () => {
    const cases = [
      '?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z',
      '?from=2026-01-01T00:00:00Z&to=2026-01-01T00:00:00Z',
      '?from=2026-01-01T00:00:00Z&to=2026-02-01T01:00:00Z',
      '?bucket=day&from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z',
      '?bucket=week',
      '?to=yesterday',
      // a leap second: the format passes it, Date does not read it
      '?to=2026-06-30T23:59:60Z',
      '?from=0000-12-31T00:00:00Z&to=0001-01-01T05:00:00Z',
      '?bucket=day&from=9999-12-01T00:00:00Z&to=9999-12-31T23:30:00Z',
    ];
    for (const query of cases) {
      const res = await api(app, admin, { method: 'GET', url: `/api/v2/admin/stats${query}` });
      assert.equal(res.statusCode, 422, `${query}: ${res.body}`);
      assert.equal(errorBody(res).error_code, 'VALIDATION_ERROR');
    }
    // exactly 744 hours is allowed
    assert.equal((await stats('?from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z')).orders.length, 744);
  });
});

describe('GET /api/v2/admin/stats with STATS_CACHE_SECONDS', () => {
  it('answers the same buckets from memory within the time, and reads again for other buckets', async (t) => {
    const app = await buildTestApp(t, { statsCacheSeconds: 600 });
    const admin = await createUser(app, { admin: true, login: false });
    const user = await createUser(app, { login: false });
    const product = await createProduct(app, { stock: 10 });
    const read = async (query: string) => {
      const res = await api(app, admin, { method: 'GET', url: `/api/v2/admin/stats${query}` });
      assert.equal(res.statusCode, 200, res.body);
      return res.json<Stats>().orders.reduce((n, b) => n + b.pending + b.processing + b.completed + b.failed, 0);
    };
    // a fixed end: the same buckets however long the test takes
    const to = encodeURIComponent(new Date(Math.ceil(Date.now() / HOUR) * HOUR + HOUR).toISOString());
    assert.equal(await read(`?to=${to}`), 0);
    await pendingOrder(app, user, [{ productId: product.id, quantity: 1 }]);
    assert.equal(await read(`?to=${to}`), 0, 'the same buckets, from memory');
    assert.equal(await read(`?bucket=day&to=${to}`), 1, 'other buckets, read from the database');
  });
});
