import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, createUser, errorBody, waitFor } from '../../helpers/app.ts';
import { fixturePayload, seedProduct, sendInbound, SHOPIFY_SECRET, shopifyHmac, startReceiver, type Receiver } from '../../helpers/webhooks.ts';

async function inboundRows(app: FastifyInstance) {
  return app.ctx.db.selectFrom('inbound_webhooks').selectAll().orderBy('id').execute();
}

async function waitSettled(app: FastifyInstance, webhookId: string) {
  return waitFor(async () => {
    const row = await app.ctx.db.selectFrom('inbound_webhooks').selectAll().where('webhook_id', '=', webhookId).executeTakeFirst();
    return row && row.status !== 'received' ? row : undefined;
  });
}

async function ordersFor(app: FastifyInstance, externalId: string) {
  return app.ctx.db.selectFrom('orders').selectAll().where('source', '=', 'shopify').where('external_id', '=', externalId).execute();
}

let uniqueOrder = 9000000000000;
/** The fixture with a fresh platform order id (and optionally other changes). */
function payloadWith(changes: Record<string, unknown> = {}): Record<string, unknown> {
  return { ...fixturePayload(), id: ++uniqueOrder, ...changes };
}

describe('inbound platform webhooks', () => {
  let app: FastifyInstance;
  let platform: Receiver;

  before(async () => {
    platform = await startReceiver('/admin/api');
    platform.respond = () => ({ status: 201, body: '{"fulfillment":{"id":1}}' });
    app = await buildTestApp(undefined, {
      shopifyWebhookSecret: SHOPIFY_SECRET,
      platformApiUrl: platform.url,
      platformApiToken: 'shpat_test_token',
    });
    await seedProduct(app, 'MUG-CERAMIC-350', { price: '12.50', stock: 1000 });
    await seedProduct(app, 'TEA-EARLGREY-100', { price: '32.50', stock: 1000 });
  });
  after(async () => {
    await app.close();
    await platform.close();
  });

  it('the fixture payload becomes an order whose lines map by sku, for a new inactive customer, and the platform hears the outcome', async () => {
    const body = JSON.stringify(fixturePayload());
    const res = await sendInbound(app, body, { webhookId: 'fixture-delivery-1' });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { status: 'received', webhook_id: 'fixture-delivery-1', duplicate: false });

    const stored = await app.ctx.db.selectFrom('inbound_webhooks').selectAll().where('webhook_id', '=', 'fixture-delivery-1').executeTakeFirstOrThrow();
    assert.equal(stored.raw_body, body, 'the raw body is stored byte for byte');
    assert.equal(stored.topic, 'orders/create');
    assert.equal(stored.shop_domain, 'test-shop.myshopify.com');
    const headers = stored.headers as Record<string, string>;
    assert.equal(headers['x-shopify-webhook-id'], 'fixture-delivery-1');
    assert.ok(headers['x-shopify-triggered-at']);
    assert.equal(headers['x-shopify-hmac-sha256'], shopifyHmac(body));

    const settled = await waitSettled(app, 'fixture-delivery-1');
    assert.equal(settled.status, 'processed', settled.error ?? '');
    assert.equal(settled.error, null);
    assert.ok(settled.processed_at);
    const [order] = await ordersFor(app, '5512345678901');
    assert.ok(order, 'order created');
    assert.equal(settled.order_id, order.id);
    assert.match(order.shipping_address, /12 Harbour Street/);
    assert.match(order.shipping_address, /Portland/);

    const lines = await app.ctx.db
      .selectFrom('order_items as i')
      .innerJoin('products as p', 'p.id', 'i.product_id')
      .select(['p.sku', 'i.quantity'])
      .where('i.order_id', '=', order.id)
      .orderBy('p.sku')
      .execute();
    assert.deepEqual(lines, [
      { sku: 'MUG-CERAMIC-350', quantity: 2 },
      { sku: 'TEA-EARLGREY-100', quantity: 1 },
    ]);

    const customer = await app.ctx.db.selectFrom('users').selectAll().where('id', '=', order.user_id).executeTakeFirstOrThrow();
    assert.equal(customer.email, 'jane.doe@example.com');
    assert.equal(customer.full_name, 'Jane Doe');
    assert.equal(customer.is_active, false);
    assert.equal(customer.password_hash, null);

    // the same background processing as API orders: priced and stock reserved
    const done = await waitFor(async () => {
      const o = await app.ctx.db.selectFrom('orders').selectAll().where('id', '=', order.id).executeTakeFirst();
      return o && o.status !== 'pending' && o.status !== 'processing' ? o : undefined;
    });
    assert.equal(done.status, 'completed');
    assert.equal(Number(done.total_amount), 57.5);

    const call = await waitFor(async () => platform.requests.find((r) => r.url === '/admin/api/orders/5512345678901/fulfillments'));
    assert.equal(call.method, 'POST');
    assert.equal(call.headers['x-shopify-access-token'], 'shpat_test_token');
    const sent = JSON.parse(call.body) as { fulfillment: { status: string; order_id: string; line_items: { sku: string; quantity: number }[] } };
    assert.equal(sent.fulfillment.status, 'success');
    assert.equal(sent.fulfillment.order_id, '5512345678901');
    assert.deepEqual(
      sent.fulfillment.line_items.sort((a, b) => a.sku.localeCompare(b.sku)),
      [
        { sku: 'MUG-CERAMIC-350', quantity: 2 },
        { sku: 'TEA-EARLGREY-100', quantity: 1 },
      ],
    );
  });

  it('a repeated webhook id answers 200 and is not processed again (one order)', async () => {
    const body = JSON.stringify(payloadWith());
    const first = await sendInbound(app, body, { webhookId: 'dup-1' });
    const second = await sendInbound(app, body, { webhookId: 'dup-1' });
    assert.equal(first.statusCode, 200);
    assert.equal(second.statusCode, 200);
    assert.equal(first.json().duplicate, false);
    assert.equal(second.json().duplicate, true);
    await waitSettled(app, 'dup-1');
    const rows = (await inboundRows(app)).filter((r) => r.webhook_id === 'dup-1');
    assert.equal(rows.length, 1);
    assert.equal((await ordersFor(app, String(uniqueOrder))).length, 1);
  });

  it('the same platform order under two webhook ids gives one order, linked from both events', async () => {
    const body = JSON.stringify(payloadWith());
    const externalId = String(uniqueOrder);
    assert.equal((await sendInbound(app, body, { webhookId: 'twice-a' })).statusCode, 200);
    // a second delivery of the order, serialised anew (the identical body is a replay: see replay.test.ts)
    assert.equal((await sendInbound(app, `${body}\n`, { webhookId: 'twice-b' })).statusCode, 200);
    const a = await waitSettled(app, 'twice-a');
    const b = await waitSettled(app, 'twice-b');
    const orders = await ordersFor(app, externalId);
    assert.equal(orders.length, 1);
    assert.equal(a.status, 'processed');
    assert.equal(b.status, 'processed');
    assert.equal(a.order_id, orders[0].id);
    assert.equal(b.order_id, orders[0].id);
  });

  it('an existing customer is linked by e-mail (case-insensitively), not duplicated', async () => {
    const existing = await createUser(app, { email: `known-${uniqueOrder}@example.com` });
    const body = JSON.stringify(payloadWith({ email: existing.email.toUpperCase(), customer: { email: existing.email, first_name: 'K', last_name: 'N' } }));
    const res = await sendInbound(app, body, { webhookId: 'known-customer' });
    assert.equal(res.statusCode, 200);
    const settled = await waitSettled(app, 'known-customer');
    assert.equal(settled.status, 'processed', settled.error ?? '');
    const order = await app.ctx.db.selectFrom('orders').selectAll().where('id', '=', settled.order_id).executeTakeFirstOrThrow();
    assert.equal(order.user_id, existing.user.id);
  });

  it('an unknown sku fails the event with the error recorded, and creates no order and no customer', async () => {
    const items = [{ id: 1, sku: 'NO-SUCH-SKU', title: 'Ghost', quantity: 1, price: '1.00' }, ...(fixturePayload().line_items as object[])];
    const body = JSON.stringify(payloadWith({ email: 'ghost-buyer@example.com', line_items: items }));
    const externalId = String(uniqueOrder);
    assert.equal((await sendInbound(app, body, { webhookId: 'unknown-sku' })).statusCode, 200);
    const settled = await waitSettled(app, 'unknown-sku');
    assert.equal(settled.status, 'failed');
    assert.equal(settled.error, 'unknown SKU: NO-SUCH-SKU');
    assert.equal(settled.order_id, null);
    assert.ok(settled.processed_at);
    assert.equal((await ordersFor(app, externalId)).length, 0);
    const ghost = await app.ctx.db.selectFrom('users').select('id').where('email', '=', 'ghost-buyer@example.com').executeTakeFirst();
    assert.equal(ghost, undefined);
  });

  it('a payload that is not an order fails with the reason recorded', async () => {
    const body = JSON.stringify({ id: 77, line_items: [] });
    assert.equal((await sendInbound(app, body, { webhookId: 'not-an-order' })).statusCode, 200);
    const settled = await waitSettled(app, 'not-an-order');
    assert.equal(settled.status, 'failed');
    assert.match(settled.error ?? '', /invalid order payload: \/line_items/);
  });

  it('a tampered body is refused with 401 and nothing is stored', async () => {
    const original = JSON.stringify(payloadWith());
    const tampered = original.replace('"quantity":2', '"quantity":20');
    assert.notEqual(tampered, original);
    const before = (await inboundRows(app)).length;
    const res = await sendInbound(app, tampered, { hmac: shopifyHmac(original), webhookId: 'tampered' });
    assert.equal(res.statusCode, 401);
    assert.deepEqual(errorBody(res), { detail: 'Invalid webhook signature', error_code: 'INVALID_SIGNATURE' });
    assert.equal((await inboundRows(app)).length, before);
  });

  it('a signature made with another secret, a missing signature and a malformed one are all 401', async () => {
    const body = JSON.stringify(payloadWith());
    const before = (await inboundRows(app)).length;
    const wrong = await sendInbound(app, body, { secret: 'another-secret' });
    const missing = await sendInbound(app, body, { hmac: null });
    const garbage = await sendInbound(app, body, { hmac: 'not base64 at all!!' });
    const short = await sendInbound(app, body, { hmac: shopifyHmac(body).slice(0, 20) });
    const empty = await sendInbound(app, body, { hmac: '' });
    for (const res of [wrong, missing, garbage, short, empty]) {
      assert.equal(res.statusCode, 401, res.body);
      assert.equal(errorBody(res).error_code, 'INVALID_SIGNATURE');
    }
    assert.equal((await inboundRows(app)).length, before);
  });

  it('a correctly signed body that is not a JSON object is stored and acknowledged; processing fails it with the reason', async () => {
    const before = (await inboundRows(app)).length;
    const cases: { name: string; body: Buffer; error: string }[] = [
      { name: 'not-json', body: Buffer.from('{"id": 1, oops'), error: 'payload is not valid JSON' },
      { name: 'empty', body: Buffer.alloc(0), error: 'payload is not valid JSON' },
      { name: 'array', body: Buffer.from('[1,2,3]'), error: 'payload is not a JSON object' },
      { name: 'null', body: Buffer.from('null'), error: 'payload is not a JSON object' },
      { name: 'string', body: Buffer.from('"an order"'), error: 'payload is not a JSON object' },
      // bytes PostgreSQL cannot keep as text: stored in base64
      { name: 'nul-byte', body: Buffer.from('{"id": 1,\u0000"x": 2}'), error: 'payload is not UTF-8 text' },
      { name: 'not-utf8', body: Buffer.from([0x7b, 0x22, 0x69, 0x64, 0x22, 0x3a, 0xff, 0xfe, 0x7d]), error: 'payload is not UTF-8 text' },
    ];
    for (const c of cases) {
      const webhookId = `unusable-${c.name}`;
      const res = await sendInbound(app, c.body, { webhookId });
      assert.equal(res.statusCode, 200, `${c.name}: ${res.body}`);
      assert.deepEqual(res.json(), { status: 'received', webhook_id: webhookId, duplicate: false });
      const row = await waitSettled(app, webhookId);
      assert.equal(row.status, 'failed', c.name);
      assert.equal(row.error, c.error, c.name);
      assert.equal(row.order_id, null);
      assert.ok(row.processed_at);
      const stored = Buffer.from(row.raw_body ?? '', row.raw_body_encoding === 'base64' ? 'base64' : 'utf8');
      assert.ok(stored.equals(c.body), `${c.name}: stored byte for byte`);
      assert.equal(row.raw_body_encoding, c.error === 'payload is not UTF-8 text' ? 'base64' : 'utf8', c.name);
      // the dedupe rules are the same for any body
      const again = await sendInbound(app, c.body, { webhookId });
      assert.equal(again.json().duplicate, true, c.name);
    }
    assert.equal((await inboundRows(app)).length, before + cases.length);

    // without a webhook id, the digest of the bytes is the id: a resend is a duplicate
    const body = Buffer.from([0x00, 0x01, 0xc3, 0x28]);
    const first = await sendInbound(app, body, { webhookId: null });
    const second = await sendInbound(app, body, { webhookId: null });
    assert.equal(first.statusCode, 200);
    assert.match(first.json().webhook_id, /^sha256:[0-9a-f]{64}$/);
    assert.deepEqual(second.json(), { ...first.json(), duplicate: true });
    assert.equal((await waitSettled(app, first.json().webhook_id)).error, 'payload is not UTF-8 text');
    assert.equal((await inboundRows(app)).length, before + cases.length + 1);
  });

  it('without X-Shopify-Webhook-Id the body digest is the id, so a resend is still a duplicate', async () => {
    const body = JSON.stringify(payloadWith());
    const first = await sendInbound(app, body, { webhookId: null });
    const second = await sendInbound(app, body, { webhookId: null });
    assert.equal(first.statusCode, 200);
    assert.match(first.json().webhook_id, /^sha256:[0-9a-f]{64}$/);
    assert.equal(second.json().webhook_id, first.json().webhook_id);
    assert.equal(second.json().duplicate, true);
    await waitSettled(app, first.json().webhook_id);
    assert.equal((await ordersFor(app, String(uniqueOrder))).length, 1);
  });

  it('signature is checked over the raw bytes: reformatted JSON with the same meaning fails', async () => {
    const compact = JSON.stringify(payloadWith());
    const pretty = JSON.stringify(JSON.parse(compact), null, 2);
    const res = await sendInbound(app, pretty, { hmac: shopifyHmac(compact) });
    assert.equal(res.statusCode, 401);
    const ok = await sendInbound(app, pretty, { hmac: shopifyHmac(pretty) });
    assert.equal(ok.statusCode, 200);
  });

  it('an oversized body is 413 and nothing is stored; a body without a content type is still verified and taken', async () => {
    const before = (await inboundRows(app)).length;
    const huge = JSON.stringify(payloadWith({ note: 'x'.repeat(app.ctx.config.bodyLimitBytes + 10) }));
    const tooLarge = await sendInbound(app, huge);
    assert.equal(tooLarge.statusCode, 413);
    assert.equal(errorBody(tooLarge).error_code, 'PAYLOAD_TOO_LARGE');
    assert.equal((await inboundRows(app)).length, before);

    const body = JSON.stringify(payloadWith());
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/webhooks/orders/create',
      headers: { 'x-shopify-hmac-sha256': shopifyHmac(body), 'x-shopify-webhook-id': 'no-content-type', 'x-shopify-topic': 'orders/create' },
      payload: Buffer.from(body),
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal((await waitSettled(app, 'no-content-type')).status, 'processed');
  });

  it('acknowledges 200 webhooks in a row, each with 200 (timings reported; the speed target is checked by the bench)', async (t) => {
    const bodies = Array.from({ length: 200 }, () => JSON.stringify(payloadWith({ line_items: [{ sku: 'NO-SUCH', quantity: 1 }] })));
    const times: number[] = [];
    for (const body of bodies) {
      const t0 = performance.now();
      const res = await sendInbound(app, body);
      times.push(performance.now() - t0);
      assert.equal(res.statusCode, 200);
    }
    times.sort((a, b) => a - b);
    const p50 = times[Math.floor(times.length * 0.5)];
    const p99 = times[Math.floor(times.length * 0.99) - 1];
    t.diagnostic(`inbound acknowledgement: p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms (${process.env.TEST_DATABASE_URL ? 'PostgreSQL' : 'PGlite'})`);
  });
});

describe('inbound webhooks: configuration and outages', () => {
  it('without a configured secret the route answers 503 and stores nothing', async (t) => {
    const app = await buildTestApp(t, { shopifyWebhookSecret: undefined });
    const res = await sendInbound(app, JSON.stringify(fixturePayload()));
    assert.equal(res.statusCode, 503);
    assert.equal(errorBody(res).error_code, 'WEBHOOK_NOT_CONFIGURED');
    assert.equal((await inboundRows(app)).length, 0);
  });

  it('with the database down the route answers 5xx (the platform retries), never 200', async (t) => {
    const app = await buildTestApp(undefined, { shopifyWebhookSecret: SHOPIFY_SECRET });
    t.after(() => app.close().catch(() => {}));
    await app.ctx.database.close();
    const res = await sendInbound(app, JSON.stringify(fixturePayload()));
    assert.ok(res.statusCode >= 500, `got ${res.statusCode}`);
    assert.ok(typeof errorBody(res).error_code === 'string');
  });
});
