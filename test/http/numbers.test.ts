import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { MAX_ITEM_PRICE } from '../../src/modules/items/items.schemas.ts';
import { api, buildTestApp, createUser, errorBody, type TestUser } from '../helpers/app.ts';
import { createProduct } from '../helpers/products.ts';

const json = { 'content-type': 'application/json' };

describe('numbers are finite everywhere', () => {
  let app: FastifyInstance;
  let user: TestUser;
  let admin: TestUser;
  let itemId: number;
  let productId: number;
  before(async () => {
    app = await buildTestApp(undefined);
    user = await createUser(app);
    admin = await createUser(app, { admin: true });
    const item = await api(app, user, { method: 'POST', url: '/api/v1/items', payload: { name: 'n', price: 1 } });
    itemId = item.json<{ id: number }>().id;
    productId = (await createProduct(app)).id;
  });
  after(() => app.close());

  const count = async (table: 'items' | 'products' | 'orders') =>
    Number((await app.ctx.db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);

  it('1e309 (Infinity once parsed) in a body is refused and stores nothing', async () => {
    const before = { items: await count('items'), products: await count('products'), orders: await count('orders') };
    for (const [who, method, url, payload] of [
      [user, 'POST', '/api/v1/items', '{"name":"n","price":1e309}'],
      [user, 'POST', '/api/v1/items', '{"name":"n","price":-1e309}'],
      [admin, 'POST', '/api/v1/products', '{"sku":"INF-1","name":"n","price":1e309,"stock":1}'],
      [admin, 'PATCH', `/api/v1/products/${productId}`, '{"price":1e309}'],
      [user, 'POST', '/api/v1/orders', `{"items":[{"product_id":${productId},"quantity":1e309}],"shipping_address":"x"}`],
    ] as const) {
      const res = await api(app, who, { method, url, headers: json, payload });
      assert.equal(res.statusCode, 422, `${method} ${url} ${payload}: ${res.statusCode} ${res.body}`);
      assert.equal(errorBody(res).error_code, 'VALIDATION_ERROR');
    }
    assert.deepEqual({ items: await count('items'), products: await count('products'), orders: await count('orders') }, before);
    // PATCH /items answers body validation failures with 400 (the specification's contract for it)
    const patch = await api(app, user, { method: 'PATCH', url: `/api/v1/items/${itemId}`, headers: json, payload: '{"price":1e309}' });
    assert.equal(patch.statusCode, 400, patch.body);
    assert.equal(errorBody(patch).error_code, 'INVALID_INPUT');
    const item = await api(app, user, { method: 'GET', url: `/api/v1/items/${itemId}` });
    assert.equal(item.json<{ price: number }>().price, 1);
  });

  it('non-finite and out-of-range numbers in a query string are 422', async () => {
    for (const url of ['/api/v1/users?page=1e309', '/api/v1/orders?page_size=Infinity', '/api/v1/items?skip=NaN', '/api/v1/items?limit=-Infinity']) {
      const res = await api(app, admin, { method: 'GET', url });
      assert.equal(res.statusCode, 422, `${url}: ${res.statusCode} ${res.body}`);
    }
  });

  it('an item price has a finite upper bound, stated in the OpenAPI document', async () => {
    const over = await api(app, user, { method: 'POST', url: '/api/v1/items', payload: { name: 'n', price: MAX_ITEM_PRICE * 10 } });
    assert.equal(over.statusCode, 422, over.body);
    const at = await api(app, user, { method: 'POST', url: '/api/v1/items', payload: { name: 'n', price: MAX_ITEM_PRICE } });
    assert.equal(at.statusCode, 201, at.body);
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const schema = doc.paths['/api/v1/items'].post.requestBody.content['application/json'].schema;
    assert.equal(schema.properties.price.maximum, MAX_ITEM_PRICE);
  });

  it('two-decimal money is accepted as written (19.99 is a multiple of 0.01), three decimals are not', async () => {
    for (const [price, status] of [
      [19.99, 201],
      [1234567.89, 201],
      [9999999999.99, 201],
      [0.07, 201],
      [1.005, 422],
    ] as const) {
      const res = await api(app, admin, { method: 'POST', url: '/api/v1/products', payload: { sku: `M-${price}`, name: 'n', price, stock: 1 } });
      assert.equal(res.statusCode, status, `${price}: ${res.body}`);
    }
  });
});
