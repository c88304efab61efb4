import assert from 'node:assert/strict';
import { describe, it, before, after } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { OrderStatus } from '../../../src/db/schema.ts';
import { api, buildTestApp, createUser, type TestUser } from '../../helpers/app.ts';

/**
 * A user's orders and one order as each API version answers them: rows mapped once in TypeScript,
 * serialized by the route's response schema. The expected values are written out here, not taken
 * from the mapper.
 */
describe("GET /orders and GET /orders/{id}: each version's shape, totals and pages", () => {
  let app: FastifyInstance;
  let owner: TestUser;
  const ids: Record<string, number> = {};

  before(async () => {
    app = await buildTestApp(undefined);
    owner = await createUser(app);
    const other = await createUser(app, { login: false });
    const db = app.ctx.db;
    const [product] = await db.insertInto('products').values({ sku: `READS-${Date.now()}`, name: 'Lamp', price: '1.00', stock: 10 }).returning('id').execute();
    // one order per status, a second by one microsecond apart in the same millisecond: the id orders them
    const rows: { key: string; status: OrderStatus; created: string }[] = [
      { key: 'pending', status: 'pending', created: '2026-11-25T10:00:00.100001Z' },
      { key: 'processing', status: 'processing', created: '2026-11-25T10:00:01.000000Z' },
      { key: 'completed', status: 'completed', created: '2026-11-25T10:00:02.000000Z' },
      { key: 'failed', status: 'failed', created: '2026-11-25T10:00:03.000000Z' },
      { key: 'cancelled', status: 'cancelled', created: '2026-11-25T10:00:03.000000Z' },
    ];
    for (const r of rows) {
      const { id } = await db
        .insertInto('orders')
        .values({
          user_id: owner.user.id,
          status: r.status,
          total_amount: r.status === 'completed' ? '9999999999.99' : '0.00',
          shipping_address: 'Somewhere 1',
          failure_reason: r.status === 'failed' ? 'OUT_OF_STOCK' : null,
          cancelled_at: (r.status === 'cancelled' ? '2026-11-25T11:00:00.987654Z' : null) as never,
          created_at: r.created as never,
          updated_at: r.created as never,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      ids[r.key] = id;
    }
    await db
      .insertInto('order_items')
      .values([
        { order_id: ids.completed, product_id: product.id, product_name: 'Lamp "brass"', quantity: 3, unit_price: '3333333333.33' },
        { order_id: ids.completed, product_id: product.id, product_name: 'Lamp', quantity: 1, unit_price: '0.01' },
      ])
      .execute();
    // another user's order counts for nobody here
    await db.insertInto('orders').values({ user_id: other.user.id, status: 'pending', total_amount: '0', shipping_address: 'x' }).execute();
  });
  after(() => app.close());

  const page = async (version: string, query: string) => {
    const res = await api(app, owner, { method: 'GET', url: `/api/${version}/orders${query}` });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
    return res.json<{ items: Record<string, unknown>[]; total: number; page: number; page_size: number; has_next: boolean }>();
  };

  it('v1: the specification\'s page, a cancelled order read as failed, newest first', async () => {
    const all = await page('v1', '');
    assert.deepEqual(Object.keys(all), ['items', 'total', 'page', 'page_size', 'has_next']);
    assert.equal(all.total, 5);
    assert.deepEqual(
      all.items.map((o) => [o.id, o.status]),
      [
        [ids.cancelled, 'failed'],
        [ids.failed, 'failed'],
        [ids.completed, 'completed'],
        [ids.processing, 'processing'],
        [ids.pending, 'pending'],
      ],
    );
    for (const o of all.items) assert.deepEqual(Object.keys(o), ['id', 'user_id', 'status', 'total_amount', 'created_at', 'updated_at']);
    assert.equal(all.items[2].total_amount, 9999999999.99);
    assert.equal(all.items[4].created_at, '2026-11-25T10:00:00.100Z');

    const failed = await page('v1', '?status=failed&page_size=1');
    assert.deepEqual([failed.total, failed.items.length, failed.has_next], [2, 1, true]);
    const second = await page('v1', '?status=failed&page_size=1&page=2');
    assert.deepEqual([second.total, second.items.map((o) => o.id), second.has_next], [2, [ids.failed], false]);
    const past = await page('v1', '?page=3&page_size=2');
    assert.deepEqual([past.total, past.items.length, past.has_next], [5, 1, false]);
    const beyond = await page('v1', '?page=9');
    assert.deepEqual([beyond.total, beyond.items, beyond.has_next], [5, [], false]);
  });

  it('v2: cancelled is its own status, with failure_reason and cancelled_at', async () => {
    const all = await page('v2', '');
    assert.equal(all.total, 5);
    const byId = new Map(all.items.map((o) => [o.id, o]));
    assert.deepEqual(Object.keys(byId.get(ids.cancelled)!), ['id', 'user_id', 'status', 'total_amount', 'failure_reason', 'cancelled_at', 'created_at', 'updated_at']);
    assert.equal(byId.get(ids.cancelled)!.status, 'cancelled');
    assert.equal(byId.get(ids.cancelled)!.cancelled_at, '2026-11-25T11:00:00.987Z');
    assert.equal(byId.get(ids.failed)!.failure_reason, 'OUT_OF_STOCK');
    assert.equal(byId.get(ids.pending)!.cancelled_at, null);
    const failed = await page('v2', '?status=failed');
    assert.deepEqual([failed.total, failed.items.map((o) => o.id)], [1, [ids.failed]]);
    const cancelled = await page('v2', '?status=cancelled');
    assert.deepEqual([cancelled.total, cancelled.items.map((o) => o.id)], [1, [ids.cancelled]]);
  });

  it('one order with its lines, in each version', async () => {
    const v1 = await api(app, owner, { method: 'GET', url: `/api/v1/orders/${ids.completed}` });
    assert.equal(v1.statusCode, 200, v1.body);
    const detail = v1.json<Record<string, unknown> & { items: Record<string, unknown>[] }>();
    assert.deepEqual(Object.keys(detail), ['id', 'user_id', 'status', 'total_amount', 'shipping_address', 'items', 'created_at', 'updated_at']);
    assert.deepEqual(
      detail.items.map((l) => [l.product_name, l.quantity, l.unit_price]),
      [
        ['Lamp "brass"', 3, 3333333333.33],
        ['Lamp', 1, 0.01],
      ],
    );
    assert.deepEqual(Object.keys(detail.items[0]), ['id', 'product_id', 'product_name', 'quantity', 'unit_price']);

    const v1Cancelled = (await api(app, owner, { method: 'GET', url: `/api/v1/orders/${ids.cancelled}` })).json<Record<string, unknown>>();
    assert.deepEqual([v1Cancelled.status, v1Cancelled.items], ['failed', []]);
    const v2 = (await api(app, owner, { method: 'GET', url: `/api/v2/orders/${ids.cancelled}` })).json<Record<string, unknown>>();
    assert.deepEqual([v2.status, v2.failure_reason, v2.cancelled_at], ['cancelled', null, '2026-11-25T11:00:00.987Z']);

    const other = await createUser(app);
    assert.equal((await api(app, other, { method: 'GET', url: `/api/v1/orders/${ids.completed}` })).statusCode, 403);
    assert.equal((await api(app, owner, { method: 'GET', url: '/api/v2/orders/2000000000' })).statusCode, 404);
  });
});
