import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, errorBody, type TestUser } from '../../helpers/app.ts';
import { createProduct } from '../../helpers/products.ts';

/**
 * The admin order list's date filters at the edges of the range the API accepts (years 1–9999,
 * UTC): a date whose whole day ends with the range, or an instant at its last millisecond, is a
 * filter like any other (200), never a year 10000 the database refuses (a 500 on PGlite).
 */
describe('admin order list: date filters at the edge of the range', () => {
  let app: FastifyInstance;
  let admin: TestUser;
  let orderId: number;

  before(async () => {
    app = await buildTestApp(undefined);
    admin = await createUser(app, { admin: true });
    const shopper = await createUser(app);
    const pen = await createProduct(app, { price: '1.00', stock: 10 });
    const res = await api(app, shopper, { method: 'POST', url: '/api/v1/orders', payload: { items: [{ product_id: pen.id, quantity: 1 }], shipping_address: '1 Main St' } });
    assert.equal(res.statusCode, 201, res.body);
    orderId = res.json<{ id: number }>().id;
  });
  after(() => app.close());

  const ids = async (url: string) => {
    const res = await api(app, admin, { method: 'GET', url });
    assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
    return res.json<{ items: { id: number }[] }>().items.map((o) => o.id);
  };

  for (const version of ['v1', 'v2']) {
    it(`${version}: the last day and the last instant of year 9999 and the first of year 1 answer 200`, async () => {
      const list = `/api/${version}/admin/orders`;
      // upper edges: every order is created before them
      for (const q of ['created_to=9999-12-31', `created_to=${encodeURIComponent('9999-12-31T23:59:59.999Z')}`, `created_to=${encodeURIComponent('9999-12-31T23:59:59.999+00:00')}`]) {
        assert.deepEqual(await ids(`${list}?${q}`), [orderId], q);
      }
      assert.deepEqual(await ids(`${list}?created_from=0001-01-01&created_to=9999-12-31`), [orderId]);
      // lower edges, and a range inside the last day: none matches
      for (const q of ['created_to=0001-01-01', 'created_from=9999-12-31', 'created_from=9999-12-31&created_to=9999-12-31', `created_from=${encodeURIComponent('9999-12-31T23:59:59.999Z')}`]) {
        assert.deepEqual(await ids(`${list}?${q}`), [], q);
      }
    });

    it(`${version}: beyond the range is 422`, async () => {
      for (const q of ['created_to=10000-01-01', `created_to=${encodeURIComponent('9999-12-31T23:59:59-01:00')}`, 'created_from=0000-12-31']) {
        const res = await api(app, admin, { method: 'GET', url: `/api/${version}/admin/orders?${q}` });
        assert.equal(res.statusCode, 422, `${q}: ${res.body}`);
        assert.equal(errorBody(res).error_code, 'VALIDATION_ERROR');
      }
    });
  }
});
