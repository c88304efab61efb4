import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, errorBody, type TestUser } from '../../helpers/app.ts';

const BASE = '/api/v1/webhooks/subscriptions';
const SUBSCRIPTION_KEYS = ['created_at', 'description', 'disabled_at', 'disabled_reason', 'events', 'id', 'is_active', 'previous_secret_expires_at', 'updated_at', 'url'];

describe('webhook subscriptions', () => {
  let app: FastifyInstance;
  let alice: TestUser;
  let bob: TestUser;

  before(async () => {
    app = await buildTestApp(undefined);
    alice = await createUser(app);
    bob = await createUser(app);
  });
  after(() => app.close());

  async function create(who: TestUser, body: Record<string, unknown>) {
    return api(app, who, { method: 'POST', url: BASE, payload: body });
  }

  it('creates a subscription and shows the whsec_ secret once', async () => {
    const res = await create(alice, { url: 'https://hooks.example.com/orders', events: ['order.status_changed'], description: 'ERP' });
    assert.equal(res.statusCode, 201, res.body);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), [...SUBSCRIPTION_KEYS, 'secret'].sort());
    assert.equal(body.url, 'https://hooks.example.com/orders');
    assert.deepEqual(body.events, ['order.status_changed']);
    assert.equal(body.description, 'ERP');
    assert.equal(body.is_active, true);
    assert.match(body.secret, /^whsec_[A-Za-z0-9+/]+=*$/);
    assert.ok(Buffer.from(body.secret.slice(6), 'base64').length >= 24);
    const row = await app.ctx.db.selectFrom('webhook_subscriptions').selectAll().where('id', '=', body.id).executeTakeFirstOrThrow();
    assert.equal(row.user_id, alice.user.id);
    assert.equal(row.secret, body.secret);

    const read = await api(app, alice, { method: 'GET', url: `${BASE}/${body.id}` });
    assert.equal(read.statusCode, 200);
    assert.deepEqual(Object.keys(read.json()).sort(), SUBSCRIPTION_KEYS);
    assert.ok(!read.body.includes(body.secret), 'the secret is never shown again');
  });

  it('rejects unknown event kinds, empty or repeated kinds, bad URLs and unknown fields with 422', async () => {
    const cases: Record<string, unknown>[] = [
      { url: 'https://hooks.example.com/a', events: ['order.deleted'] },
      { url: 'https://hooks.example.com/a', events: [] },
      { url: 'https://hooks.example.com/a', events: ['order.created', 'order.created'] },
      { url: 'https://hooks.example.com/a' },
      { events: ['order.created'] },
      { url: 'not a url', events: ['order.created'] },
      { url: 'ftp://hooks.example.com/a', events: ['order.created'] },
      { url: 'https://user:pw@hooks.example.com/a', events: ['order.created'] },
      { url: 'https://hooks.example.com/a', events: ['order.created'], secret: 'whsec_mine' },
      { url: 'https://hooks.example.com/a', events: ['order.created'], description: 'x'.repeat(501) },
    ];
    const before = await app.ctx.db.selectFrom('webhook_subscriptions').select('id').execute();
    for (const payload of cases) {
      const res = await create(alice, payload);
      assert.equal(res.statusCode, 422, `${JSON.stringify(payload)} → ${res.statusCode} ${res.body}`);
      assert.equal(errorBody(res).error_code, 'VALIDATION_ERROR');
    }
    const afterRows = await app.ctx.db.selectFrom('webhook_subscriptions').select('id').execute();
    assert.equal(afterRows.length, before.length);
  });

  it('requires authentication', async () => {
    const res = await app.inject({ method: 'POST', url: BASE, payload: { url: 'https://hooks.example.com/x', events: ['order.created'] } });
    assert.equal(res.statusCode, 401);
    const list = await app.inject({ method: 'GET', url: BASE });
    assert.equal(list.statusCode, 401);
  });

  it('lists only the caller\'s subscriptions, paginated', async () => {
    const carol = await createUser(app);
    for (let i = 0; i < 3; i++) await create(carol, { url: `https://hooks.example.com/c${i}`, events: ['order.created'] });
    await create(bob, { url: 'https://hooks.example.com/bob', events: ['order.created'] });
    const page1 = await api(app, carol, { method: 'GET', url: `${BASE}?page=1&page_size=2` });
    assert.equal(page1.statusCode, 200);
    const body = page1.json();
    assert.equal(body.total, 3);
    assert.equal(body.page, 1);
    assert.equal(body.page_size, 2);
    assert.equal(body.has_next, true);
    assert.equal(body.items.length, 2);
    assert.deepEqual(Object.keys(body.items[0]).sort(), SUBSCRIPTION_KEYS);
    const page2 = (await api(app, carol, { method: 'GET', url: `${BASE}?page=2&page_size=2` })).json();
    assert.equal(page2.items.length, 1);
    assert.equal(page2.has_next, false);
    assert.deepEqual([...body.items, ...page2.items].map((s: { url: string }) => s.url), ['https://hooks.example.com/c0', 'https://hooks.example.com/c1', 'https://hooks.example.com/c2']);
    const bad = await api(app, carol, { method: 'GET', url: `${BASE}?page_size=101` });
    assert.equal(bad.statusCode, 422);
  });

  it('PATCH changes only the given fields; re-enabling clears the disabled state', async () => {
    const created = (await create(alice, { url: 'https://hooks.example.com/p', events: ['order.created'], description: 'before' })).json();
    const res = await api(app, alice, { method: 'PATCH', url: `${BASE}/${created.id}`, payload: { events: ['order.created', 'order.status_changed'] } });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.deepEqual(body.events, ['order.created', 'order.status_changed']);
    assert.equal(body.url, 'https://hooks.example.com/p');
    assert.equal(body.description, 'before');
    assert.ok(body.updated_at);

    await app.ctx.db
      .updateTable('webhook_subscriptions')
      .set({ is_active: false, disabled_reason: 'receiver answered 410 Gone', consecutive_failures: 5 })
      .where('id', '=', created.id)
      .execute();
    const enabled = await api(app, alice, { method: 'PATCH', url: `${BASE}/${created.id}`, payload: { is_active: true, description: null } });
    assert.equal(enabled.statusCode, 200);
    assert.equal(enabled.json().is_active, true);
    assert.equal(enabled.json().disabled_reason, null);
    assert.equal(enabled.json().description, null);
    const row = await app.ctx.db.selectFrom('webhook_subscriptions').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow();
    assert.equal(row.consecutive_failures, 0);

    for (const payload of [{ events: ['nope'] }, { url: 'ftp://x.example.com' }, { secret: 'whsec_x' }, { is_active: 'yes' }]) {
      const bad = await api(app, alice, { method: 'PATCH', url: `${BASE}/${created.id}`, payload });
      assert.equal(bad.statusCode, 422, JSON.stringify(payload));
    }
  });

  it('another user\'s subscription is 403 on every operation; a missing one is 404', async () => {
    const created = (await create(alice, { url: 'https://hooks.example.com/private', events: ['order.created'] })).json();
    const ops = [
      { method: 'GET', url: `${BASE}/${created.id}` },
      { method: 'PATCH', url: `${BASE}/${created.id}`, payload: { description: 'mine now' } },
      { method: 'DELETE', url: `${BASE}/${created.id}` },
      { method: 'GET', url: `${BASE}/${created.id}/deliveries` },
      { method: 'POST', url: `${BASE}/${created.id}/test` },
      { method: 'POST', url: `${BASE}/${created.id}/rotate-secret` },
    ] as const;
    for (const op of ops) {
      const res = await api(app, bob, op);
      assert.equal(res.statusCode, 403, `${op.method} ${op.url}: ${res.body}`);
      assert.equal(errorBody(res).error_code, 'FORBIDDEN');
      const missing = await api(app, bob, { ...op, url: op.url.replace(`/${created.id}`, '/999999') });
      assert.equal(missing.statusCode, 404, `${op.method} missing: ${missing.body}`);
      assert.deepEqual(errorBody(missing), { detail: 'Subscription not found', error_code: 'NOT_FOUND' });
    }
    const row = await app.ctx.db.selectFrom('webhook_subscriptions').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow();
    assert.equal(row.description, null);
    assert.equal(row.deleted_at, null);
    assert.equal(row.secret, created.secret);
  });

  it('DELETE is a soft delete: 204, then 404 and absent from the list', async () => {
    const created = (await create(alice, { url: 'https://hooks.example.com/gone', events: ['order.created'] })).json();
    const del = await api(app, alice, { method: 'DELETE', url: `${BASE}/${created.id}` });
    assert.equal(del.statusCode, 204);
    assert.equal(del.body, '');
    assert.equal((await api(app, alice, { method: 'GET', url: `${BASE}/${created.id}` })).statusCode, 404);
    assert.equal((await api(app, alice, { method: 'DELETE', url: `${BASE}/${created.id}` })).statusCode, 404);
    const list = (await api(app, alice, { method: 'GET', url: `${BASE}?page_size=100` })).json();
    assert.ok(!list.items.some((s: { id: number }) => s.id === created.id));
    const row = await app.ctx.db.selectFrom('webhook_subscriptions').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow();
    assert.ok(row.deleted_at);
    assert.equal(row.is_active, false);
  });

  it('rotate-secret returns a new secret and stores it', async () => {
    const created = (await create(alice, { url: 'https://hooks.example.com/r', events: ['order.created'] })).json();
    const res = await api(app, alice, { method: 'POST', url: `${BASE}/${created.id}/rotate-secret` });
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.match(body.secret, /^whsec_/);
    assert.notEqual(body.secret, created.secret);
    const row = await app.ctx.db.selectFrom('webhook_subscriptions').select('secret').where('id', '=', created.id).executeTakeFirstOrThrow();
    assert.equal(row.secret, body.secret);
  });

  it('the test route refuses a disabled subscription with 400', async () => {
    const created = (await create(alice, { url: 'https://hooks.example.com/t', events: ['order.created'] })).json();
    await api(app, alice, { method: 'PATCH', url: `${BASE}/${created.id}`, payload: { is_active: false } });
    const res = await api(app, alice, { method: 'POST', url: `${BASE}/${created.id}/test` });
    assert.equal(res.statusCode, 400);
    assert.equal(errorBody(res).error_code, 'INVALID_STATE');
  });
});
