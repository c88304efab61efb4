import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, errorBody, type TestUser } from '../../helpers/app.ts';
import { seedProductsIfEmpty } from '../../../src/modules/products/products.repository.ts';
import { DEMO_CATALOG } from '../../../src/modules/products/products.seed.ts';
import { createProduct } from '../../helpers/products.ts';

const PRODUCT_FIELDS = ['created_at', 'id', 'is_active', 'name', 'price', 'sku', 'stock', 'updated_at'];

describe('products', () => {
  let app: FastifyInstance;
  let admin: TestUser;
  let alice: TestUser;
  before(async () => {
    app = await buildTestApp(undefined);
    admin = await createUser(app, { admin: true });
    alice = await createUser(app);
  });
  after(() => app.close());

  it('an admin creates a product: 201 with exactly the product fields, money as a number', async () => {
    const res = await api(app, admin, {
      method: 'POST',
      url: '/api/v1/products',
      payload: { sku: 'CREATE-1', name: 'Widget', price: 19.99, stock: 5 },
    });
    assert.equal(res.statusCode, 201, res.body);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), PRODUCT_FIELDS);
    assert.equal(body.price, 19.99);
    assert.equal(body.stock, 5);
    assert.equal(body.is_active, true);
    const row = await app.ctx.db.selectFrom('products').selectAll().where('id', '=', body.id).executeTakeFirstOrThrow();
    assert.equal(row.price, '19.99');
  });

  it('a duplicate sku is 400 SKU_EXISTS', async () => {
    await createProduct(app, { sku: 'DUP-1' });
    const res = await api(app, admin, { method: 'POST', url: '/api/v1/products', payload: { sku: 'DUP-1', name: 'Other', price: 1, stock: 0 } });
    assert.equal(res.statusCode, 400);
    assert.equal(errorBody(res).error_code, 'SKU_EXISTS');
  });

  it('prices with more than two decimals, zero or negative prices and bad stock are 422', async () => {
    for (const payload of [
      { sku: 'BAD-1', name: 'x', price: 1.999, stock: 1 },
      { sku: 'BAD-2', name: 'x', price: 0, stock: 1 },
      { sku: 'BAD-3', name: 'x', price: -5, stock: 1 },
      { sku: 'BAD-4', name: 'x', price: 1, stock: -1 },
      { sku: 'BAD-5', name: 'x', price: 1, stock: 1.5 },
      { sku: 'BAD-6', name: 'x', price: '1.00', stock: 1 },
      { sku: 'BAD-7', name: 'x', price: 1 },
      { sku: 'BAD-8', name: 'x', price: 1, stock: 1, extra: true },
    ]) {
      const res = await api(app, admin, { method: 'POST', url: '/api/v1/products', payload });
      assert.equal(res.statusCode, 422, `${JSON.stringify(payload)} → ${res.body}`);
      assert.equal(errorBody(res).error_code, 'VALIDATION_ERROR');
    }
    const count = await app.ctx.db.selectFrom('products').select('id').where('sku', 'like', 'BAD-%').execute();
    assert.equal(count.length, 0);
  });

  it('prices that are not exact in binary floating point are still accepted (0.1 + 0.2 style)', async () => {
    for (const [i, price] of [0.07, 0.29, 1.15, 4.35, 1234567.89, 9999999999.99].entries()) {
      const res = await api(app, admin, { method: 'POST', url: '/api/v1/products', payload: { sku: `FP-${i}`, name: 'fp', price, stock: 1 } });
      assert.equal(res.statusCode, 201, `${price} → ${res.body}`);
      assert.equal(res.json().price, price);
    }
  });

  it('a non-admin cannot create or update products (403)', async () => {
    const p = await createProduct(app);
    const create = await api(app, alice, { method: 'POST', url: '/api/v1/products', payload: { sku: 'NOPE', name: 'x', price: 1, stock: 1 } });
    assert.equal(create.statusCode, 403);
    assert.equal(errorBody(create).error_code, 'ADMIN_REQUIRED');
    const patch = await api(app, alice, { method: 'PATCH', url: `/api/v1/products/${p.id}`, payload: { stock: 0 } });
    assert.equal(patch.statusCode, 403);
  });

  it('unauthenticated requests are 401', async () => {
    const res = await app.inject({ method: 'GET', url: '/api/v1/products' });
    assert.equal(res.statusCode, 401);
  });

  it('PATCH changes only the given fields; 404 for an unknown product; sku clash is 400', async () => {
    const p = await createProduct(app, { name: 'Before', price: '5.00', stock: 3 });
    const other = await createProduct(app);
    const res = await api(app, admin, { method: 'PATCH', url: `/api/v1/products/${p.id}`, payload: { price: 7.5 } });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().price, 7.5);
    assert.equal(res.json().name, 'Before');
    assert.equal(res.json().stock, 3);
    const clash = await api(app, admin, { method: 'PATCH', url: `/api/v1/products/${p.id}`, payload: { sku: other.sku } });
    assert.equal(clash.statusCode, 400);
    assert.equal(errorBody(clash).error_code, 'SKU_EXISTS');
    const missing = await api(app, admin, { method: 'PATCH', url: '/api/v1/products/999999', payload: { stock: 1 } });
    assert.equal(missing.statusCode, 404);
    assert.deepEqual(errorBody(missing), { detail: 'Product not found', error_code: 'NOT_FOUND' });
  });

  it('non-admins see only active products; admins see all and can filter', async () => {
    const hidden = await createProduct(app, { active: false });
    const visible = await createProduct(app);
    const list = await api(app, alice, { method: 'GET', url: '/api/v1/products?page_size=100' });
    assert.equal(list.statusCode, 200);
    const body = list.json();
    assert.deepEqual(Object.keys(body).sort(), ['has_next', 'items', 'page', 'page_size', 'total']);
    const ids = body.items.map((p: { id: number }) => p.id);
    assert.ok(ids.includes(visible.id));
    assert.ok(!ids.includes(hidden.id));
    assert.ok(body.items.every((p: { is_active: boolean }) => p.is_active));
    assert.deepEqual(Object.keys(body.items[0]).sort(), PRODUCT_FIELDS);

    const one = await api(app, alice, { method: 'GET', url: `/api/v1/products/${hidden.id}` });
    assert.equal(one.statusCode, 404);
    const asAdmin = await api(app, admin, { method: 'GET', url: `/api/v1/products/${hidden.id}` });
    assert.equal(asAdmin.statusCode, 200);
    const inactive = await api(app, admin, { method: 'GET', url: '/api/v1/products?is_active=false&page_size=100' });
    assert.ok(inactive.json().items.some((p: { id: number }) => p.id === hidden.id));
    assert.ok(inactive.json().items.every((p: { is_active: boolean }) => !p.is_active));
  });

  it('pagination: page_size over 100 is 422; has_next is right', async () => {
    const bad = await api(app, alice, { method: 'GET', url: '/api/v1/products?page_size=101' });
    assert.equal(bad.statusCode, 422);
    const page = await api(app, alice, { method: 'GET', url: '/api/v1/products?page=1&page_size=1' });
    assert.equal(page.json().items.length, 1);
    assert.equal(page.json().has_next, page.json().total > 1);
  });
});

describe('demo catalogue', () => {
  it('is seeded once into an empty catalogue at start-up, and never into a non-empty one', async (t) => {
    const app = await buildTestApp(t, { seedDemoCatalog: true });
    const rows = await app.ctx.db.selectFrom('products').select('sku').execute();
    assert.equal(rows.length, DEMO_CATALOG.length);
    // a second start (or a racing one) inserts nothing
    assert.equal(await seedProductsIfEmpty(app.ctx.db, DEMO_CATALOG), 0);
    await Promise.all([seedProductsIfEmpty(app.ctx.db, DEMO_CATALOG), seedProductsIfEmpty(app.ctx.db, DEMO_CATALOG)]);
    const after = await app.ctx.db.selectFrom('products').select('sku').execute();
    assert.equal(after.length, DEMO_CATALOG.length);
  });

  it('is not seeded when disabled', async (t) => {
    const app = await buildTestApp(t, { seedDemoCatalog: false });
    const rows = await app.ctx.db.selectFrom('products').select('sku').execute();
    assert.equal(rows.length, 0);
  });
});
