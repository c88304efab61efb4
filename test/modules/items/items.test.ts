import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, errorBody, type TestUser } from '../../helpers/app.ts';

const ITEM_FIELDS = ['created_at', 'description', 'id', 'is_active', 'name', 'price', 'user_id'];

describe('items', () => {
  let app: FastifyInstance;
  let alice: TestUser;
  let bob: TestUser;
  before(async () => {
    app = await buildTestApp(undefined);
    alice = await createUser(app);
    bob = await createUser(app);
  });
  after(() => app.close());

  const create = (who: TestUser, payload: Record<string, unknown>) => api(app, who, { method: 'POST', url: '/api/v1/items', payload });

  it('POST /items: 201 with exactly the Item fields and the defaults', async () => {
    const res = await create(alice, { name: 'Lamp', price: 12.5 });
    assert.equal(res.statusCode, 201, res.body);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ITEM_FIELDS);
    assert.equal(body.name, 'Lamp');
    assert.equal(body.description, null);
    assert.equal(body.price, 12.5);
    assert.equal(body.is_active, true);
    assert.equal(body.user_id, alice.user.id);
    assert.ok(!Number.isNaN(Date.parse(body.created_at)));
    const row = await app.ctx.db.selectFrom('items').selectAll().where('id', '=', body.id).executeTakeFirstOrThrow();
    assert.equal(row.user_id, alice.user.id);
    assert.equal(row.deleted_at, null);
  });

  it('POST /items keeps a float price as given and accepts description and is_active', async () => {
    const res = await create(alice, { name: 'Pen', description: 'blue', price: 0.333, is_active: false });
    assert.equal(res.statusCode, 201);
    assert.equal(res.json().price, 0.333);
    assert.equal(res.json().description, 'blue');
    assert.equal(res.json().is_active, false);
  });

  it('POST /items validation: 422 for every format problem, nothing stored', async () => {
    const before = await app.ctx.db.selectFrom('items').select('id').execute();
    for (const payload of [
      {},
      { price: 1 },
      { name: 'x' },
      { name: '', price: 1 },
      { name: 'x'.repeat(101), price: 1 },
      { name: 'x', price: 0 },
      { name: 'x', price: -1 },
      { name: 'x', price: '1' },
      { name: 'x', price: 1, description: 'd'.repeat(501) },
      { name: 'x', price: 1, is_active: 'yes' },
      { name: 'x', price: 1, owner: 3 },
    ]) {
      const res = await create(alice, payload);
      assert.equal(res.statusCode, 422, `${JSON.stringify(payload)} → ${res.body}`);
      assert.equal(errorBody(res).error_code, 'VALIDATION_ERROR');
    }
    const ok = await create(alice, { name: 'x'.repeat(100), price: 1, description: 'd'.repeat(500) });
    assert.equal(ok.statusCode, 201);
    const after = await app.ctx.db.selectFrom('items').select('id').execute();
    assert.equal(after.length, before.length + 1);
  });

  it('401 without a token; 403 Inactive user for an inactive user', async () => {
    const none = await app.inject({ method: 'POST', url: '/api/v1/items', payload: { name: 'x', price: 1 } });
    assert.equal(none.statusCode, 401);
    const carol = await createUser(app, { active: false });
    const inactive = await create(carol, { name: 'x', price: 1 });
    assert.equal(inactive.statusCode, 403);
    assert.deepEqual(errorBody(inactive), { detail: 'Inactive user', error_code: 'INACTIVE_USER' });
  });

  it("GET /items is a plain array of the caller's live items, with skip, limit and is_active", async () => {
    const dave = await createUser(app);
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) ids.push((await create(dave, { name: `d${i}`, price: i + 1, is_active: i % 2 === 0 })).json().id);
    await create(bob, { name: 'not dave', price: 1 });
    await api(app, dave, { method: 'DELETE', url: `/api/v1/items/${ids[4]}` });

    const all = await api(app, dave, { method: 'GET', url: '/api/v1/items' });
    assert.equal(all.statusCode, 200);
    const list = all.json();
    assert.ok(Array.isArray(list));
    assert.deepEqual(list.map((i: { id: number }) => i.id), ids.slice(0, 4));
    assert.deepEqual(Object.keys(list[0]).sort(), ITEM_FIELDS);

    const page = await api(app, dave, { method: 'GET', url: '/api/v1/items?skip=1&limit=2' });
    assert.deepEqual(page.json().map((i: { id: number }) => i.id), ids.slice(1, 3));
    const active = await api(app, dave, { method: 'GET', url: '/api/v1/items?is_active=true' });
    assert.deepEqual(active.json().map((i: { id: number }) => i.id), [ids[0], ids[2]]);
    const inactive = await api(app, dave, { method: 'GET', url: '/api/v1/items?is_active=false' });
    assert.deepEqual(inactive.json().map((i: { id: number }) => i.id), [ids[1], ids[3]]);
    // the spellings Python's requests (True) and form-minded clients (1, off) send
    for (const [word, expected] of [['True', [ids[0], ids[2]]], ['1', [ids[0], ids[2]]], ['off', [ids[1], ids[3]]]] as const) {
      const res = await api(app, dave, { method: 'GET', url: `/api/v1/items?is_active=${word}` });
      assert.deepEqual(res.json().map((i: { id: number }) => i.id), expected, word);
    }
  });

  it('GET /items with bad parameters is 422', async () => {
    for (const q of ['skip=-1', 'limit=0', 'limit=101', 'limit=abc', 'is_active=maybe']) {
      const res = await api(app, alice, { method: 'GET', url: `/api/v1/items?${q}` });
      assert.equal(res.statusCode, 422, q);
      assert.equal(errorBody(res).error_code, 'VALIDATION_ERROR');
    }
    const none = await app.inject({ method: 'GET', url: '/api/v1/items' });
    assert.equal(none.statusCode, 401);
  });

  it("GET /items/{id}: owner 200, another user's item 403, unknown 404", async () => {
    const item = (await create(alice, { name: 'Mine', price: 3 })).json();
    const own = await api(app, alice, { method: 'GET', url: `/api/v1/items/${item.id}` });
    assert.equal(own.statusCode, 200);
    assert.deepEqual(own.json(), item);
    const other = await api(app, bob, { method: 'GET', url: `/api/v1/items/${item.id}` });
    assert.equal(other.statusCode, 403);
    assert.equal(errorBody(other).error_code, 'FORBIDDEN');
    const missing = await api(app, alice, { method: 'GET', url: '/api/v1/items/999999' });
    assert.equal(missing.statusCode, 404);
    assert.deepEqual(errorBody(missing), { detail: 'Item not found', error_code: 'NOT_FOUND' });
    const bad = await api(app, alice, { method: 'GET', url: '/api/v1/items/abc' });
    assert.equal(bad.statusCode, 422);
  });

  it('PATCH /items/{id} changes only the given fields; null clears the description', async () => {
    const item = (await create(alice, { name: 'Old', description: 'desc', price: 4 })).json();
    const res = await api(app, alice, { method: 'PATCH', url: `/api/v1/items/${item.id}`, payload: { price: 5.25 } });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { ...item, price: 5.25 });
    const cleared = await api(app, alice, { method: 'PATCH', url: `/api/v1/items/${item.id}`, payload: { description: null, name: 'New', is_active: false } });
    assert.deepEqual(cleared.json(), { ...item, price: 5.25, description: null, name: 'New', is_active: false });
    const row = await app.ctx.db.selectFrom('items').selectAll().where('id', '=', item.id).executeTakeFirstOrThrow();
    assert.equal(row.name, 'New');
    assert.ok(row.updated_at);
  });

  it("PATCH /items/{id}: 403 for another user's item (unchanged), 404 unknown, 400 bad values (spec 4.4)", async () => {
    const item = (await create(alice, { name: 'Keep', price: 4 })).json();
    const other = await api(app, bob, { method: 'PATCH', url: `/api/v1/items/${item.id}`, payload: { name: 'Stolen' } });
    assert.equal(other.statusCode, 403);
    const row = await app.ctx.db.selectFrom('items').select('name').where('id', '=', item.id).executeTakeFirstOrThrow();
    assert.equal(row.name, 'Keep');
    const missing = await api(app, alice, { method: 'PATCH', url: '/api/v1/items/999999', payload: { name: 'x' } });
    assert.equal(missing.statusCode, 404);
    for (const payload of [{ price: 0 }, { name: '' }, { description: 'd'.repeat(501) }, { user_id: bob.user.id }, { name: 'a\u0000b' }]) {
      const res = await api(app, alice, { method: 'PATCH', url: `/api/v1/items/${item.id}`, payload });
      assert.equal(res.statusCode, 400, JSON.stringify(payload));
      const body = errorBody(res);
      assert.equal(body.error_code, 'INVALID_INPUT');
      assert.ok(Array.isArray(body.errors) && body.errors.length > 0);
    }
    const unchanged = await app.ctx.db.selectFrom('items').selectAll().where('id', '=', item.id).executeTakeFirstOrThrow();
    assert.equal(unchanged.name, 'Keep');
    assert.equal(unchanged.price, 4);
    assert.equal(unchanged.user_id, alice.user.id);
    const badId = await api(app, alice, { method: 'PATCH', url: '/api/v1/items/abc', payload: { name: 'x' } });
    assert.equal(badId.statusCode, 422);
  });

  it('DELETE /items/{id}: 204 empty, soft delete, then 404 everywhere', async () => {
    const item = (await create(alice, { name: 'Bye', price: 1 })).json();
    const forbidden = await api(app, bob, { method: 'DELETE', url: `/api/v1/items/${item.id}` });
    assert.equal(forbidden.statusCode, 403);
    const res = await api(app, alice, { method: 'DELETE', url: `/api/v1/items/${item.id}` });
    assert.equal(res.statusCode, 204);
    assert.equal(res.body, '');
    const row = await app.ctx.db.selectFrom('items').selectAll().where('id', '=', item.id).executeTakeFirstOrThrow();
    assert.ok(row.deleted_at, 'the row stays, marked deleted');
    for (const method of ['GET', 'PATCH', 'DELETE'] as const) {
      const again = await api(app, alice, { method, url: `/api/v1/items/${item.id}`, ...(method === 'PATCH' ? { payload: { name: 'x' } } : {}) });
      assert.equal(again.statusCode, 404, method);
    }
    const list = await api(app, alice, { method: 'GET', url: '/api/v1/items?limit=100' });
    assert.ok(!list.json().some((i: { id: number }) => i.id === item.id));
  });
});
