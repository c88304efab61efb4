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

/** The ranged counts at the same edges: a range reaching before year 1 is 422, never a query of year 0 (a 500 on PGlite). */
describe('stats ranges: the edges of the range', () => {
  let app: FastifyInstance;
  let admin: TestUser;
  let subscriptionId: number;

  before(async () => {
    app = await buildTestApp(undefined);
    admin = await createUser(app, { admin: true });
    const sub = await api(app, admin, { method: 'POST', url: '/api/v2/webhooks/subscriptions', payload: { url: 'https://receiver.example/hook', events: ['order.created'] } });
    assert.equal(sub.statusCode, 201, sub.body);
    subscriptionId = sub.json<{ id: number }>().id;
  });
  after(() => app.close());

  const get = (url: string) => api(app, admin, { method: 'GET', url });
  const at = (s: string) => encodeURIComponent(s);

  it("a subscription's delivery stats: a default range reaching before year 1 is 422; the first hours and the last day of the range answer 200", async () => {
    const stats = `/api/v2/webhooks/subscriptions/${subscriptionId}/stats`;
    for (const q of [`to=${at('0001-01-01T00:00:00Z')}`, `to=${at('0001-01-01T00:00:00Z')}&bucket=day`, `to=${at('0001-01-01T12:00:00Z')}`, `from=${at('0000-12-31T23:00:00Z')}&to=${at('0001-01-01T01:00:00Z')}`]) {
      const res = await get(`${stats}?${q}`);
      assert.equal(res.statusCode, 422, `${q}: ${res.body}`);
      assert.equal(errorBody(res).error_code, 'VALIDATION_ERROR');
    }
    for (const q of [`from=${at('0001-01-01T00:00:00Z')}&to=${at('0001-01-01T03:00:00Z')}`, `to=${at('9999-12-31T23:59:59.999Z')}`, `to=${at('9999-12-31T23:59:59.999Z')}&bucket=day`]) {
      const res = await get(`${stats}?${q}`);
      assert.equal(res.statusCode, 200, `${q}: ${res.body}`);
      const body = res.json<{ from: string; buckets: { start: string }[] }>();
      assert.ok(body.buckets.length > 0 && Date.parse(body.from) >= Date.parse('0001-01-01T00:00:00Z'), `${q}: ${res.body}`);
    }
  });

  it('the administrators\' overview: the same edges', async () => {
    for (const q of [`to=${at('0001-01-01T00:00:00Z')}`, `to=${at('0001-01-01T00:00:00Z')}&bucket=day`]) {
      const res = await get(`/api/v2/admin/stats?${q}`);
      assert.equal(res.statusCode, 422, `${q}: ${res.body}`);
      assert.equal(errorBody(res).error_code, 'VALIDATION_ERROR');
    }
    for (const q of [`from=${at('0001-01-01T00:00:00Z')}&to=${at('0001-01-01T03:00:00Z')}`, `to=${at('9999-12-31T23:00:00Z')}`, `to=${at('9999-12-31T00:00:00Z')}&bucket=day`]) {
      const res = await get(`/api/v2/admin/stats?${q}`);
      assert.equal(res.statusCode, 200, `${q}: ${res.body}`);
    }
  });
});
