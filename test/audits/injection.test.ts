import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { api, type TestUser, buildTestApp, createUser, snapshot } from '../helpers/app.ts';
import { createProduct } from '../helpers/products.ts';

/** Hostile text: stored exactly as sent, or refused with 422 — never a 500, never altered. */
const VALUES: Record<string, string> = {
  'sql quote': "'; DROP TABLE users; --",
  'sql or': '" OR 1=1 --',
  'sql paren': "Robert'); DELETE FROM orders WHERE ('1'='1",
  'like and escapes': '100% _wild_ \\ backslash $1 $$ \\x00',
  'json-looking': '{"$ne": null, "__proto__": {"is_admin": true}}',
  'nul byte': 'abc\u0000def',
  'lone surrogate': 'bad \ud800 surrogate',
  'non-ascii': 'Zoë Ünïcødé 日本語 🚀 \u202eRTL\u202c \u200b',
  'astral at the limit': '🚀'.repeat(100),
  'very long': 'x'.repeat(100_000),
  'control chars': 'line1\r\nline2\tTab\u0007bell\u001b[31m',
  'html': '<script>alert(1)</script><img src=x onerror=alert(1)>',
};

interface Field {
  label: string;
  send(value: string): Promise<LightMyRequestResponse>;
  /** the stored value after a 2xx */
  stored(res: LightMyRequestResponse): Promise<string | null>;
}

describe('injection: hostile strings in every text field', () => {
  let app: FastifyInstance;
  let admin: TestUser;
  let user: TestUser;
  /** places no orders: its subscriptions start no deliveries behind the snapshots */
  let quiet: TestUser;
  let productId: number;
  let itemId: number;
  let subscriptionId: number;
  const fields: Field[] = [];

  before(async () => {
    // the subscription's host does not resolve: its messages' retries come after the suite ends
    app = await buildTestApp(undefined, { webhookRetrySchedule: [3600] });
    admin = await createUser(app, { login: false, admin: true });
    user = await createUser(app, { login: false });
    quiet = await createUser(app, { login: false });
    productId = (await createProduct(app)).id;
    const item = await api(app, user, { method: 'POST', url: '/api/v1/items', payload: { name: 'base', price: 1 } });
    itemId = item.json<{ id: number }>().id;
    const sub = await api(app, user, {
      method: 'POST',
      url: '/api/v1/webhooks/subscriptions',
      payload: { url: 'https://hooks.example.com/x', events: ['order.status_changed'] },
    });
    subscriptionId = sub.json<{ id: number }>().id;
    const col = async (table: 'users' | 'items' | 'orders' | 'products' | 'webhook_subscriptions', column: string, id: number) => {
      const row = await app.ctx.db.selectFrom(table).select(column as 'id').where('id', '=', id).executeTakeFirstOrThrow();
      return (row as unknown as Record<string, string | null>)[column] ?? null;
    };
    const idOf = (res: LightMyRequestResponse) => res.json<{ id: number }>().id;
    fields.push(
      {
        label: 'POST /users full_name',
        send: (v) => api(app, admin, { method: 'POST', url: '/api/v1/users', payload: { email: `inj-${crypto.randomUUID()}@example.com`, full_name: v, password: 'password-123' } }),
        stored: (res) => col('users', 'full_name', idOf(res)),
      },
      {
        label: 'PATCH /users full_name',
        send: (v) => api(app, user, { method: 'PATCH', url: `/api/v1/users/${user.user.id}`, payload: { full_name: v } }),
        stored: () => col('users', 'full_name', user.user.id),
      },
      {
        label: 'POST /users email (local part)',
        send: (v) => api(app, admin, { method: 'POST', url: '/api/v1/users', payload: { email: `${v}@example.com`, full_name: 'n', password: 'password-123' } }),
        stored: async (res) => (await col('users', 'email', idOf(res)))?.replace(/@example\.com$/, '') ?? null,
      },
      {
        label: 'POST /items name',
        send: (v) => api(app, user, { method: 'POST', url: '/api/v1/items', payload: { name: v, price: 1 } }),
        stored: (res) => col('items', 'name', idOf(res)),
      },
      {
        label: 'POST /items description',
        send: (v) => api(app, user, { method: 'POST', url: '/api/v1/items', payload: { name: 'n', description: v, price: 1 } }),
        stored: (res) => col('items', 'description', idOf(res)),
      },
      {
        label: 'PATCH /items description',
        send: (v) => api(app, user, { method: 'PATCH', url: `/api/v1/items/${itemId}`, payload: { description: v } }),
        stored: () => col('items', 'description', itemId),
      },
      {
        label: 'POST /orders shipping_address',
        send: (v) => api(app, user, { method: 'POST', url: '/api/v1/orders', payload: { items: [{ product_id: productId, quantity: 1 }], shipping_address: v } }),
        stored: (res) => col('orders', 'shipping_address', idOf(res)),
      },
      {
        label: 'POST /products name',
        send: (v) => api(app, admin, { method: 'POST', url: '/api/v1/products', payload: { sku: `S-${crypto.randomBytes(4).toString('hex')}`, name: v, price: 1, stock: 1 } }),
        stored: (res) => col('products', 'name', idOf(res)),
      },
      {
        label: 'POST /products sku',
        send: (v) => api(app, admin, { method: 'POST', url: '/api/v1/products', payload: { sku: v, name: 'n', price: 1, stock: 1 } }),
        stored: (res) => col('products', 'sku', idOf(res)),
      },
      {
        label: 'POST /webhooks/subscriptions description',
        // one URL per subscription: a user's second subscription to the same URL is refused
        send: (v) =>
          api(app, quiet, {
            method: 'POST',
            url: '/api/v1/webhooks/subscriptions',
            payload: { url: `https://hooks.example.com/y/${crypto.randomBytes(4).toString('hex')}`, events: ['order.created'], description: v },
          }),
        stored: (res) => col('webhook_subscriptions', 'description', idOf(res)),
      },
      {
        label: 'PATCH /webhooks/subscriptions url (path)',
        send: (v) => api(app, user, { method: 'PATCH', url: `/api/v1/webhooks/subscriptions/${subscriptionId}`, payload: { url: `https://hooks.example.com/${v}` } }),
        // URLs are stored normalised (percent-encoded), which is not the string sent; checked for "no 500" only
        stored: async () => null,
      },
    );
  });
  after(() => app.close());

  for (const [name, value] of Object.entries(VALUES)) {
    it(`${name}: stored verbatim or 422, never 500`, async () => {
      const outcomes: string[] = [];
      for (const field of fields) {
        const res = await field.send(value);
        assert.ok(res.statusCode < 500, `${field.label}: ${res.statusCode} ${res.body.slice(0, 200)}`);
        if (res.statusCode >= 200 && res.statusCode < 300) {
          const stored = await field.stored(res);
          if (field.label.includes('url (path)')) continue;
          assert.equal(stored, value, `${field.label}: stored value differs`);
          outcomes.push(`${field.label}: stored`);
        } else {
          // 413: a body past the largest valid body of its route is refused before it is parsed
          assert.ok([400, 413, 422].includes(res.statusCode), `${field.label}: ${res.statusCode} ${res.body.slice(0, 200)}`);
          outcomes.push(`${field.label}: ${res.statusCode}`);
        }
      }
      // text PostgreSQL cannot hold verbatim is always refused
      if (name === 'nul byte' || name === 'lone surrogate') assert.ok(outcomes.every((o) => !o.endsWith('stored')), outcomes.join('; '));
    });
  }

  it('hostile query strings and path parameters are 422 (404 for an id out of range) and change nothing', async () => {
    const before = await snapshot(app);
    for (const url of [
      "/api/v1/orders?status=pending'%20OR%20'1'='1",
      '/api/v1/orders?status=pending%00',
      '/api/v1/users?is_active=true%27--',
      '/api/v1/users/1%20OR%201=1',
      '/api/v1/users/1;DROP%20TABLE%20users',
      '/api/v1/items?skip=0;DELETE',
      '/api/v1/items/%00',
    ]) {
      const res = await api(app, user, { method: 'GET', url });
      assert.equal(res.statusCode, 422, `${url}: ${res.statusCode} ${res.body.slice(0, 200)}`);
    }
    // integers no row can have are well-formed: not found, and never sent to the database
    for (const url of ['/api/v1/orders/-1', '/api/v1/orders/99999999999']) {
      const res = await api(app, user, { method: 'GET', url });
      assert.equal(res.statusCode, 404, `${url}: ${res.statusCode} ${res.body.slice(0, 200)}`);
    }
    // a number past any float is no integer at all
    const infinite = await api(app, user, { method: 'GET', url: '/api/v1/orders/1e400' });
    assert.equal(infinite.statusCode, 422, infinite.body.slice(0, 200));
    assert.equal(await snapshot(app), before);
  });

  it('hostile login credentials are 401, 413 (past the sign-in body limit) or 422, never 500, and change nothing', async () => {
    const before = await snapshot(app);
    for (const value of Object.values(VALUES)) {
      for (const payload of [
        { username: value, password: 'whatever-password' },
        { username: `${user.email}' --`, password: value },
        { username: user.email, password: value },
      ]) {
        const res = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload });
        assert.ok([401, 413, 422].includes(res.statusCode), `${JSON.stringify(payload).slice(0, 80)}: ${res.statusCode}`);
      }
    }
    assert.equal(await snapshot(app), before);
  });

  it('a hostile Idempotency-Key is kept as an opaque key, never a 500', async () => {
    for (const key of ["'; DROP TABLE orders; --", '" OR 1=1', 'k'.repeat(255)]) {
      const send = () =>
        api(app, user, {
          method: 'POST',
          url: '/api/v1/orders',
          headers: { 'idempotency-key': key },
          payload: { items: [{ product_id: productId, quantity: 1 }], shipping_address: 'Main St 1' },
        });
      const first = await send();
      assert.equal(first.statusCode, 201, first.body);
      const again = await send();
      assert.equal(again.statusCode, 201);
      assert.equal(again.json<{ id: number }>().id, first.json<{ id: number }>().id, 'replayed, not a new order');
    }
    const tooLong = await api(app, user, {
      method: 'POST',
      url: '/api/v1/orders',
      headers: { 'idempotency-key': 'k'.repeat(256) },
      payload: { items: [{ product_id: productId, quantity: 1 }], shipping_address: 'Main St 1' },
    });
    assert.equal(tooLong.statusCode, 422);
  });
});
