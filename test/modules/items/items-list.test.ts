import assert from 'node:assert/strict';
import { describe, it, before, after } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser } from '../../helpers/app.ts';

describe("GET /items: the caller's page, mapped once and serialized by the route's schema", () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestApp(undefined);
  });
  after(() => app.close());

  it('answers each item with the price and time stored, through the route\'s schema', async () => {
    const owner = await createUser(app);
    const db = app.ctx.db;
    // a price below 0.0001 (written 1e-05 by PostgreSQL), a large one, microseconds the API cuts to milliseconds
    const prices = [0.00001, 123456789.123, 1e12];
    for (const price of prices) {
      await db.insertInto('items').values({ user_id: owner.user.id, name: `p${price}`, price, created_at: '2026-11-25T10:00:00.123456Z' as never }).execute();
    }
    const res = await api(app, owner, { method: 'GET', url: '/api/v1/items' });
    assert.equal(res.statusCode, 200, res.body);
    const items = res.json<Record<string, unknown>[]>();
    assert.deepEqual(items.map((i) => i.price), prices);
    for (const i of items) {
      assert.deepEqual(Object.keys(i), ['id', 'name', 'description', 'price', 'is_active', 'user_id', 'created_at']);
      assert.equal(i.created_at, '2026-11-25T10:00:00.123Z');
      assert.equal(i.user_id, owner.user.id);
    }
  });

  it('filters, pages and leaves out deleted items as the query asks', async () => {
    const owner = await createUser(app);
    const other = await createUser(app);
    const create = async (who: typeof owner, name: string, isActive: boolean) => {
      const res = await api(app, who, { method: 'POST', url: '/api/v1/items', payload: { name, price: 1.5, is_active: isActive } });
      assert.equal(res.statusCode, 201, res.body);
      return res.json<{ id: number }>().id;
    };
    const ids = [];
    for (let n = 0; n < 5; n++) ids.push(await create(owner, `i${n}`, n % 2 === 0));
    await create(other, 'theirs', true);
    const gone = await api(app, owner, { method: 'DELETE', url: `/api/v1/items/${ids[2]}` });
    assert.equal(gone.statusCode, 204);

    const list = async (query: string) => {
      const res = await api(app, owner, { method: 'GET', url: `/api/v1/items${query}` });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
      return res.json<{ id: number; name: string }[]>().map((i) => i.name);
    };
    assert.deepEqual(await list(''), ['i0', 'i1', 'i3', 'i4']);
    assert.deepEqual(await list('?skip=1&limit=2'), ['i1', 'i3']);
    assert.deepEqual(await list('?is_active=true'), ['i0', 'i4']);
    assert.deepEqual(await list('?is_active=false&limit=1'), ['i1']);
    assert.deepEqual(await list('?skip=10'), []);
    const none = await api(app, await createUser(app), { method: 'GET', url: '/api/v1/items' });
    assert.equal(none.body, '[]');
  });
});
