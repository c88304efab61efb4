import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, errorBody, waitFor, type TestUser } from '../../helpers/app.ts';
import { createProduct } from '../../helpers/products.ts';
import { waitForFinal } from '../../helpers/orders.ts';
import { fixturePayload, seedProduct, sendInbound, SHOPIFY_SECRET } from '../../helpers/webhooks.ts';
import type { ProductRow } from '../../../src/modules/products/products.tables.ts';

const LIST = '/api/v1/admin/orders';
const SUMMARY_FIELDS = ['created_at', 'external_id', 'failure_reason', 'id', 'source', 'status', 'total_amount', 'updated_at', 'user_id'];
const DETAIL_FIELDS = [...SUMMARY_FIELDS, 'events', 'items', 'shipping_address'].sort();

interface Summary {
  id: number;
  user_id: number;
  status: string;
  total_amount: number;
  source: string;
  external_id: string | null;
  failure_reason: string | null;
  created_at: string;
  updated_at: string;
}
interface Page {
  items: Summary[];
  total: number;
  page: number;
  page_size: number;
  has_next: boolean;
  total_exact: boolean;
}

describe('admin order console: GET /admin/orders and GET /admin/orders/{order_id}', () => {
  let app: FastifyInstance;
  let alice: TestUser;
  let bob: TestUser;
  let admin: TestUser;
  let pen: ProductRow;
  let scarce: ProductRow;
  /** alice: 3 completed; bob: 1 completed, 1 failed (stock); 1 platform order; 2 of alice's moved to 2020 */
  const ids = { alice: [] as number[], bobCompleted: 0, bobFailed: 0, platform: 0 };
  const externalId = '770000000001';

  const place = async (who: TestUser, productId: number, quantity: number) => {
    const res = await api(app, who, { method: 'POST', url: '/api/v1/orders', payload: { items: [{ product_id: productId, quantity }], shipping_address: '1 Main St' } });
    assert.equal(res.statusCode, 201, res.body);
    return res.json<{ id: number }>().id;
  };
  const list = async (query = '', who: TestUser = admin) => {
    const res = await api(app, who, { method: 'GET', url: `${LIST}${query}` });
    assert.equal(res.statusCode, 200, `${query}: ${res.body}`);
    return res.json<Page>();
  };
  const idsOf = (page: Page) => page.items.map((o) => o.id);

  before(async () => {
    app = await buildTestApp(undefined, { shopifyWebhookSecret: SHOPIFY_SECRET });
    alice = await createUser(app);
    bob = await createUser(app);
    admin = await createUser(app, { admin: true });
    pen = await createProduct(app, { price: '2.50', stock: 1000 });
    scarce = await createProduct(app, { price: '9.00', stock: 1 });
    for (let i = 0; i < 3; i++) ids.alice.push(await place(alice, pen.id, 1));
    ids.bobCompleted = await place(bob, pen.id, 2);
    ids.bobFailed = await place(bob, scarce.id, 5);
    await Promise.all([...ids.alice, ids.bobCompleted, ids.bobFailed].map((id) => waitForFinal(app, id)));
    await seedProduct(app, 'MUG-CERAMIC-350', { stock: 100 });
    await seedProduct(app, 'TEA-EARLGREY-100', { stock: 100 });
    const res = await sendInbound(app, JSON.stringify({ ...fixturePayload(), id: Number(externalId) }));
    assert.equal(res.statusCode, 200, res.body);
    ids.platform = await waitFor(async () => {
      const row = await app.ctx.db.selectFrom('orders').select(['id', 'status']).where('external_id', '=', externalId).executeTakeFirst();
      return row && row.status === 'completed' ? row.id : undefined;
    });
    // two of alice's orders were placed long ago
    await app.ctx.db.updateTable('orders').set({ created_at: '2020-01-15T10:00:00.000Z' }).where('id', '=', ids.alice[0]).execute();
    await app.ctx.db.updateTable('orders').set({ created_at: '2020-01-16T23:30:00.000Z' }).where('id', '=', ids.alice[1]).execute();
  });
  after(() => app.close());

  it('lists every user\'s orders, newest first, in the spec\'s page shape with the admin fields', async () => {
    const page = await list();
    assert.deepEqual(Object.keys(page).sort(), ['has_next', 'items', 'page', 'page_size', 'total', 'total_exact']);
    assert.equal(page.total, 6);
    assert.equal(page.total_exact, true);
    assert.equal(page.page, 1);
    assert.equal(page.page_size, 20);
    assert.equal(page.has_next, false);
    for (const o of page.items) assert.deepEqual(Object.keys(o).sort(), SUMMARY_FIELDS);
    // newest first: the two 2020 orders last, the older of them at the very end
    assert.deepEqual(idsOf(page).slice(-2), [ids.alice[1], ids.alice[0]]);
    const times = page.items.map((o) => Date.parse(o.created_at));
    assert.deepEqual(times, [...times].sort((a, b) => b - a));
    const failed = page.items.find((o) => o.id === ids.bobFailed)!;
    assert.equal(failed.status, 'failed');
    assert.equal(failed.failure_reason, 'INSUFFICIENT_STOCK');
    assert.equal(failed.source, 'api');
    assert.equal(failed.external_id, null);
    const done = page.items.find((o) => o.id === ids.bobCompleted)!;
    assert.equal(done.failure_reason, null);
    assert.equal(done.total_amount, 5);
    const platform = page.items.find((o) => o.id === ids.platform)!;
    assert.equal(platform.source, 'platform', 'a platform order is `platform`, whichever platform sent it');
    assert.equal(platform.external_id, externalId);
  });

  it('pages: page_size up to 100, has_next, a page past the end is empty with the total', async () => {
    const first = await list('?page=1&page_size=4');
    assert.equal(first.items.length, 4);
    assert.equal(first.has_next, true);
    const second = await list('?page=2&page_size=4');
    assert.equal(second.items.length, 2);
    assert.equal(second.has_next, false);
    assert.deepEqual([...idsOf(first), ...idsOf(second)], idsOf(await list()));
    const past = await list('?page=9&page_size=4');
    assert.deepEqual(past.items, []);
    assert.equal(past.total, 6);
    assert.equal((await list('?page_size=100')).page_size, 100);
  });

  it('filters by status, user_id, source, external_id, and combinations; total counts the matches', async () => {
    const failed = await list('?status=failed');
    assert.deepEqual(idsOf(failed), [ids.bobFailed]);
    assert.equal(failed.total, 1);
    assert.equal((await list('?status=completed')).total, 5);
    assert.equal((await list('?status=pending')).total, 0);

    const bobs = await list(`?user_id=${bob.user.id}`);
    assert.deepEqual(idsOf(bobs), [ids.bobFailed, ids.bobCompleted]);
    assert.equal(bobs.total, 2);
    assert.deepEqual(idsOf(await list(`?user_id=${bob.user.id}&status=completed`)), [ids.bobCompleted]);
    assert.equal((await list(`?user_id=${admin.user.id}`)).total, 0);

    const platform = await list('?source=platform');
    assert.deepEqual(idsOf(platform), [ids.platform]);
    assert.equal(platform.total, 1);
    const viaApi = await list('?source=api');
    assert.equal(viaApi.total, 5);
    assert.ok(viaApi.items.every((o) => o.source === 'api' && o.external_id === null));
    assert.equal((await list('?source=api&status=failed')).total, 1);
    assert.equal((await list('?source=platform&status=failed')).total, 0);

    assert.deepEqual(idsOf(await list(`?external_id=${externalId}`)), [ids.platform]);
    assert.equal((await list('?external_id=no-such-order')).total, 0);
  });

  it('filters by creation time: date-times inclusive to the millisecond shown, dates as whole UTC days', async () => {
    const old = await list('?created_to=2020-12-31');
    assert.deepEqual(idsOf(old), [ids.alice[1], ids.alice[0]]);
    assert.equal(old.total, 2);
    assert.deepEqual(idsOf(await list('?created_from=2020-01-16&created_to=2020-01-16')), [ids.alice[1]]);
    assert.deepEqual(idsOf(await list('?created_from=2020-01-15T10:00:00Z&created_to=2020-01-15T10:00:00Z')), [ids.alice[0]]);
    assert.deepEqual(idsOf(await list(`?created_to=${encodeURIComponent('2020-01-16T23:30:00.000+00:00')}`)), [ids.alice[1], ids.alice[0]]);
    // the same instant written with another offset
    assert.deepEqual(idsOf(await list(`?created_from=${encodeURIComponent('2020-01-17T00:30:00+01:00')}&created_to=2020-02-01`)), [ids.alice[1]]);
    const recent = await list('?created_from=2021-01-01');
    assert.equal(recent.total, 4);
    assert.ok(!idsOf(recent).includes(ids.alice[0]));
    assert.equal((await list(`?created_from=2021-01-01&user_id=${alice.user.id}`)).total, 1);
    // an order's own created_at, copied from a response, selects it
    const newest = (await list('?page_size=1')).items[0];
    assert.deepEqual(idsOf(await list(`?created_from=${newest.created_at}&created_to=${newest.created_at}`)), [newest.id]);
  });

  it('the totals equal a count of the rows, for every status and origin', async () => {
    const rows = await app.ctx.db.selectFrom('orders').select(['status', 'source']).execute();
    for (const status of [undefined, 'pending', 'processing', 'completed', 'failed']) {
      for (const source of [undefined, 'api', 'platform']) {
        const expected = rows.filter((r) => (status === undefined || r.status === status) && (source === undefined || (source === 'api') === (r.source === 'api'))).length;
        const query = new URLSearchParams({ ...(status ? { status } : {}), ...(source ? { source } : {}) }).toString();
        assert.equal((await list(`?${query}`)).total, expected, query);
      }
    }
  });

  it('bad filters are 422 in the usual shape', async () => {
    const cases: [string, string][] = [
      ['?status=shipped', 'status'],
      ['?user_id=abc', 'user_id'],
      ['?user_id=0', 'user_id'],
      ['?user_id=99999999999', 'user_id'],
      ['?source=shopify', 'source'],
      ['?external_id=', 'external_id'],
      ['?created_from=yesterday', 'created_from'],
      ['?created_from=2026-02-30', 'created_from'],
      ['?created_to=2026-01-01T10:00:00', 'created_to'],
      ['?created_from=2026-02-01&created_to=2026-01-31', 'created_to'],
      ['?page_size=101', 'page_size'],
      ['?page=0', 'page'],
    ];
    for (const [query, field] of cases) {
      const res = await api(app, admin, { method: 'GET', url: `${LIST}${query}` });
      assert.equal(res.statusCode, 422, `${query}: ${res.body}`);
      const body = errorBody(res);
      assert.equal(body.error_code, 'VALIDATION_ERROR', query);
      assert.ok(
        (body.errors as { loc: unknown[] }[]).some((e) => e.loc[0] === 'querystring' && e.loc.includes(field)),
        `${query}: ${JSON.stringify(body.errors)}`,
      );
    }
  });

  it('GET /admin/orders/{order_id}: any order with the owner read\'s fields, source, external_id, failure_reason and events', async () => {
    const res = await api(app, admin, { method: 'GET', url: `${LIST}/${ids.bobFailed}` });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), DETAIL_FIELDS);
    // everything the owner's own read shows, the same
    const owners = (await api(app, bob, { method: 'GET', url: `/api/v1/orders/${ids.bobFailed}` })).json();
    for (const [k, v] of Object.entries(owners)) assert.deepEqual(body[k], v, k);
    assert.equal(body.source, 'api');
    assert.equal(body.external_id, null);
    assert.equal(body.failure_reason, 'INSUFFICIENT_STOCK');
    assert.deepEqual(
      body.events.map((e: { sequence: number; status: string; reason: string | null }) => [e.sequence, e.status, e.reason]),
      [
        [1, 'pending', null],
        [2, 'processing', null],
        [3, 'failed', 'INSUFFICIENT_STOCK'],
      ],
    );
    assert.deepEqual(body.events[2].details, { lines: [{ product_id: scarce.id, requested: 5, available: 1 }] });

    const platform = (await api(app, admin, { method: 'GET', url: `${LIST}/${ids.platform}` })).json();
    assert.equal(platform.source, 'platform');
    assert.equal(platform.external_id, externalId);
    assert.equal(platform.failure_reason, null);
    assert.equal(platform.items.length, 2);
  });

  it('404 for a missing order or an id no row can have, 422 for a non-integer id', async () => {
    for (const id of ['999999', '0', '-3', '99999999999']) {
      const res = await api(app, admin, { method: 'GET', url: `${LIST}/${id}` });
      assert.equal(res.statusCode, 404, id);
      assert.equal(errorBody(res).error_code, 'NOT_FOUND');
    }
    assert.equal((await api(app, admin, { method: 'GET', url: `${LIST}/abc` })).statusCode, 422);
  });

  it('403 ADMIN_REQUIRED for a non-admin (the owner included), 401 without a token', async () => {
    for (const url of [LIST, `${LIST}?status=failed`, `${LIST}/${ids.alice[2]}`, `${LIST}/999999`]) {
      const res = await api(app, alice, { method: 'GET', url });
      assert.equal(res.statusCode, 403, url);
      assert.equal(errorBody(res).error_code, 'ADMIN_REQUIRED');
      assert.equal((await api(app, null, { method: 'GET', url })).statusCode, 401, url);
    }
  });

  it('the owner\'s routes keep their shape: no admin fields in GET /orders or GET /orders/{id}', async () => {
    const own = (await api(app, alice, { method: 'GET', url: '/api/v1/orders' })).json<Page>();
    assert.deepEqual(Object.keys(own.items[0]).sort(), ['created_at', 'id', 'status', 'total_amount', 'updated_at', 'user_id']);
    const one = (await api(app, alice, { method: 'GET', url: `/api/v1/orders/${ids.alice[2]}` })).json();
    assert.deepEqual(Object.keys(one).sort(), ['created_at', 'id', 'items', 'shipping_address', 'status', 'total_amount', 'updated_at', 'user_id']);
    // and administrators still get 403 on the owner route of someone else's order
    assert.equal((await api(app, admin, { method: 'GET', url: `/api/v1/orders/${ids.alice[2]}` })).statusCode, 403);
  });
});
