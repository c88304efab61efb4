import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { api, buildTestApp, createUser, errorBody, waitFor, type TestUser } from '../../helpers/app.ts';
import { stockOf } from '../../helpers/products.ts';
import { waitForFinal } from '../../helpers/orders.ts';
import { fixturePayload, seedProduct, sendInbound, SHOPIFY_SECRET } from '../../helpers/webhooks.ts';

const LIST = '/api/v1/admin/inbound-webhooks';
const SUMMARY_FIELDS = ['error', 'id', 'order_id', 'processed_at', 'received_at', 'shop_domain', 'status', 'topic', 'webhook_id'];
const DETAIL_FIELDS = [...SUMMARY_FIELDS, 'headers', 'payload_purged_at', 'raw_body', 'raw_body_encoding'].sort();

interface Summary {
  id: number;
  webhook_id: string;
  topic: string | null;
  shop_domain: string | null;
  status: string;
  error: string | null;
  order_id: number | null;
  received_at: string;
  processed_at: string | null;
}
interface Page {
  items: Summary[];
  total: number;
  page: number;
  page_size: number;
  has_next: boolean;
}

describe('admin platform webhook console: list, read, reprocess', () => {
  let app: FastifyInstance;
  let admin: TestUser;
  let alice: TestUser;
  /** stored webhooks by what happened to them */
  const hooks = { processed: 0, unknownSku: 0, binary: 0, otherTopic: 0 };
  const bodies = { processed: '', unknownSku: '', binary: Buffer.alloc(0) };
  const unknownSkuOrderId = '880000000002';

  const list = async (query = '') => {
    const res = await api(app, admin, { method: 'GET', url: `${LIST}${query}` });
    assert.equal(res.statusCode, 200, `${query}: ${res.body}`);
    return res.json<Page>();
  };
  const stored = async (webhookId: string) =>
    waitFor(async () => {
      const row = await app.ctx.db.selectFrom('inbound_webhooks').select(['id', 'status']).where('webhook_id', '=', webhookId).executeTakeFirst();
      return row && row.status !== 'received' ? row.id : undefined;
    });
  const ordersFor = (externalId: string) => app.ctx.db.selectFrom('orders').selectAll().where('external_id', '=', externalId).execute();
  const reprocess = (id: number | string, who: TestUser = admin) => api(app, who, { method: 'POST', url: `${LIST}/${id}/reprocess` });

  before(async () => {
    app = await buildTestApp(undefined, { shopifyWebhookSecret: SHOPIFY_SECRET });
    admin = await createUser(app, { admin: true });
    alice = await createUser(app);
    await seedProduct(app, 'MUG-CERAMIC-350', { stock: 100 });
    await seedProduct(app, 'TEA-EARLGREY-100', { stock: 100 });

    bodies.processed = JSON.stringify({ ...fixturePayload(), id: 880000000001 });
    await sendInbound(app, bodies.processed, { webhookId: 'console-processed' });
    hooks.processed = await stored('console-processed');

    const payload = fixturePayload();
    bodies.unknownSku = JSON.stringify({
      ...payload,
      id: Number(unknownSkuOrderId),
      email: 'new.customer@example.com',
      line_items: [{ sku: 'LAMP-NEW-1', title: 'Desk lamp', quantity: 3 }],
    });
    await sendInbound(app, bodies.unknownSku, { webhookId: 'console-unknown-sku' });
    hooks.unknownSku = await stored('console-unknown-sku');

    bodies.binary = Buffer.from([0xff, 0xfe, 0x00, 0x41]);
    await sendInbound(app, bodies.binary, { webhookId: 'console-binary' });
    hooks.binary = await stored('console-binary');

    // a topic no route takes any more (the route decides the topic now): a row stored by an earlier release
    await app.ctx.db
      .insertInto('inbound_webhooks')
      .values({
        webhook_id: 'console-topic',
        topic: 'orders/updated',
        headers: JSON.stringify({ 'x-shopify-topic': 'orders/updated' }),
        raw_body: JSON.stringify({ ...payload, id: 880000000003 }),
        status: 'failed',
        error: 'unsupported topic: orders/updated',
        processed_at: new Date(),
      })
      .execute();
    hooks.otherTopic = await stored('console-topic');
  });
  after(() => app.close());

  it('lists the stored webhooks newest first, in the page shape, with exactly the documented fields', async () => {
    const page = await list();
    assert.equal(page.total, 4);
    assert.equal(page.has_next, false);
    assert.deepEqual(
      page.items.map((i) => i.id),
      [hooks.otherTopic, hooks.binary, hooks.unknownSku, hooks.processed],
    );
    for (const item of page.items) assert.deepEqual(Object.keys(item).sort(), SUMMARY_FIELDS);
    const processed = page.items.find((i) => i.id === hooks.processed)!;
    assert.equal(processed.status, 'processed');
    assert.equal(processed.webhook_id, 'console-processed');
    assert.equal(processed.topic, 'orders/create');
    assert.equal(processed.shop_domain, 'test-shop.myshopify.com');
    assert.equal(processed.error, null);
    assert.equal(typeof processed.order_id, 'number');
    assert.ok(processed.processed_at && Date.parse(processed.processed_at) >= Date.parse(processed.received_at));
    const unknown = page.items.find((i) => i.id === hooks.unknownSku)!;
    assert.equal(unknown.status, 'failed');
    assert.equal(unknown.error, 'unknown SKU: LAMP-NEW-1');
    assert.equal(unknown.order_id, null);

    const paged = await list('?page=2&page_size=3');
    assert.deepEqual(paged.items.map((i) => i.id), [hooks.processed]);
    assert.equal(paged.total, 4);
    assert.equal((await list('?page=1&page_size=3')).has_next, true);
  });

  it('filters by status and topic, with totals', async () => {
    const failed = await list('?status=failed');
    assert.deepEqual(failed.items.map((i) => i.id), [hooks.otherTopic, hooks.binary, hooks.unknownSku]);
    assert.equal(failed.total, 3);
    assert.deepEqual((await list('?status=processed')).items.map((i) => i.id), [hooks.processed]);
    assert.equal((await list('?status=received')).total, 0);
    const updates = await list(`?topic=${encodeURIComponent('orders/updated')}`);
    assert.deepEqual(updates.items.map((i) => i.id), [hooks.otherTopic]);
    assert.equal(updates.total, 1);
    const creates = await list(`?topic=${encodeURIComponent('orders/create')}&status=failed`);
    assert.deepEqual(creates.items.map((i) => i.id), [hooks.binary, hooks.unknownSku]);
    assert.equal(creates.total, 2);
    assert.equal((await list('?topic=nothing')).total, 0);
  });

  it('bad filters are 422', async () => {
    for (const query of ['?status=done', '?topic=', '?page_size=101', '?page=abc']) {
      const res = await api(app, admin, { method: 'GET', url: `${LIST}${query}` });
      assert.equal(res.statusCode, 422, query);
      const body = errorBody(res);
      assert.equal(body.error_code, 'VALIDATION_ERROR');
      assert.ok(Array.isArray(body.errors) && body.errors.length > 0);
    }
  });

  it('reads one webhook with its stored headers (never the signature) and its raw body, as text or base64', async () => {
    const res = await api(app, admin, { method: 'GET', url: `${LIST}/${hooks.processed}` });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), DETAIL_FIELDS);
    assert.equal(body.raw_body, bodies.processed, 'byte for byte');
    assert.equal(body.raw_body_encoding, 'utf8');
    assert.equal(body.payload_purged_at, null);
    assert.equal(body.headers['x-shopify-webhook-id'], 'console-processed');
    assert.equal(body.headers['x-shopify-topic'], 'orders/create');
    assert.equal(body.headers['content-type'], 'application/json');
    // stored with the signature (so the body can be verified again), shown without it
    const kept = await app.ctx.db.selectFrom('inbound_webhooks').select('headers').where('id', '=', hooks.processed).executeTakeFirstOrThrow();
    assert.ok((kept.headers as Record<string, string>)['x-shopify-hmac-sha256']);
    assert.ok(!res.body.toLowerCase().includes('x-shopify-hmac-sha256'), 'the signature header is left out');

    const binary = (await api(app, admin, { method: 'GET', url: `${LIST}/${hooks.binary}` })).json();
    assert.equal(binary.raw_body_encoding, 'base64');
    assert.ok(Buffer.from(binary.raw_body, 'base64').equals(bodies.binary));
    assert.equal(binary.error, 'payload is not UTF-8 text');
  });

  it('404 for a missing webhook or an id no row can have, 422 for a non-integer id (read and reprocess)', async () => {
    for (const id of ['999999', '0', '-1', '99999999999']) {
      for (const res of [await api(app, admin, { method: 'GET', url: `${LIST}/${id}` }), await reprocess(id)]) {
        assert.equal(res.statusCode, 404, `${id}: ${res.body}`);
        assert.equal(errorBody(res).error_code, 'NOT_FOUND');
      }
    }
    assert.equal((await api(app, admin, { method: 'GET', url: `${LIST}/abc` })).statusCode, 422);
    assert.equal((await reprocess('abc')).statusCode, 422);
  });

  it('403 ADMIN_REQUIRED for a non-admin on every route, 401 without a token; nothing is queued', async () => {
    for (const [method, url] of [
      ['GET', LIST],
      ['GET', `${LIST}/${hooks.unknownSku}`],
      ['POST', `${LIST}/${hooks.unknownSku}/reprocess`],
    ] as const) {
      const res = await api(app, alice, { method, url });
      assert.equal(res.statusCode, 403, url);
      assert.equal(errorBody(res).error_code, 'ADMIN_REQUIRED');
      assert.equal((await api(app, null, { method, url })).statusCode, 401, url);
    }
    const row = await app.ctx.db.selectFrom('inbound_webhooks').select('status').where('id', '=', hooks.unknownSku).executeTakeFirstOrThrow();
    assert.equal(row.status, 'failed');
  });

  it('reprocessing a failed webhook once its product exists makes exactly one order and reserves its stock once, however many calls at once', async () => {
    assert.deepEqual(await ordersFor(unknownSkuOrderId), []);
    const lamp = await seedProduct(app, 'LAMP-NEW-1', { price: '40.00', stock: 10 });
    const answers = await Promise.all(Array.from({ length: 6 }, () => reprocess(hooks.unknownSku)));
    for (const res of answers) {
      assert.equal(res.statusCode, 202, res.body);
      const body = res.json();
      assert.deepEqual(Object.keys(body).sort(), ['message', 'order_id', 'status']);
      assert.equal(body.status, 'queued');
      assert.equal(typeof body.message, 'string');
    }
    const orderId = await waitFor(async () => {
      const row = await app.ctx.db.selectFrom('inbound_webhooks').select(['status', 'order_id']).where('id', '=', hooks.unknownSku).executeTakeFirstOrThrow();
      return row.status === 'processed' ? row.order_id! : undefined;
    });
    // null while no order existed; a call that came after the first processing names its order
    const named = answers.map((res) => res.json<{ order_id: number | null }>().order_id);
    assert.ok(named.includes(null), 'the first call found no order yet');
    for (const id of named) assert.ok(id === null || id === orderId, String(id));
    const order = await waitForFinal(app, orderId);
    assert.equal(order.status, 'completed');
    // every queued job has run by now: wait until the queue holds none for this webhook
    await waitFor(async () => {
      const { rows } = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'webhook-inbound-process' AND state < 'completed'
      `.execute(app.ctx.db);
      return rows[0].n === 0 ? true : undefined;
    });
    assert.equal((await ordersFor(unknownSkuOrderId)).length, 1, 'exactly one order');
    assert.equal(await stockOf(app, lamp.id), 7, 'stock reserved once');

    const detail = (await api(app, admin, { method: 'GET', url: `${LIST}/${hooks.unknownSku}` })).json();
    assert.equal(detail.status, 'processed');
    assert.equal(detail.error, null);
    assert.equal(detail.order_id, orderId);

    // reprocessing a processed webhook links the same order again: still one order, stock untouched
    const again = await Promise.all([reprocess(hooks.unknownSku), reprocess(hooks.unknownSku)]);
    for (const res of again) {
      assert.equal(res.statusCode, 202);
      assert.equal(res.json().order_id, orderId);
      assert.equal(res.json().status, 'queued');
    }
    await waitFor(async () => {
      const row = await app.ctx.db.selectFrom('inbound_webhooks').select('status').where('id', '=', hooks.unknownSku).executeTakeFirstOrThrow();
      return row.status === 'processed' ? true : undefined;
    });
    assert.equal((await ordersFor(unknownSkuOrderId)).length, 1);
    assert.equal(await stockOf(app, lamp.id), 7);
    const events = await api(app, admin, { method: 'GET', url: `/api/v1/admin/orders/${orderId}` });
    assert.equal(events.json().events.length, 3, 'no second processing of the order');
  });

  it('a webhook that cannot become an order fails again on reprocessing, with the reason', async () => {
    const before = await app.ctx.db.selectFrom('inbound_webhooks').selectAll().where('id', '=', hooks.otherTopic).executeTakeFirstOrThrow();
    const res = await reprocess(hooks.otherTopic);
    assert.equal(res.statusCode, 202);
    assert.equal(res.json().order_id, null);
    const row = await waitFor(async () => {
      const r = await app.ctx.db.selectFrom('inbound_webhooks').selectAll().where('id', '=', hooks.otherTopic).executeTakeFirstOrThrow();
      return r.status === 'failed' && r.processed_at! > before.processed_at! ? r : undefined;
    });
    assert.equal(row.error, 'unsupported topic: orders/updated');
  });
});
