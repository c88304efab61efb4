import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { createDeliveryAgent, type Resolver } from '../../src/modules/outbound-webhooks/ssrf.ts';
import { sendSignedMessage } from '../../src/modules/outbound-webhooks/sender.ts';
import { api, errorBody, testConfig, waitFor, type TestUser } from '../helpers/app.ts';
import { fixturePayload, seedProduct, sendInbound, SHOPIFY_SECRET, shopifyHmac, startReceiver } from '../helpers/webhooks.ts';
import { directUser, securityApp, snapshot } from '../helpers/security.ts';

const SECRET_WHSEC = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

/** Flips the low bit of one ASCII character: exactly one byte of the UTF-8 body changes. */
function flipByte(s: string, index: number): string {
  const code = s.charCodeAt(index);
  assert.ok(code < 0x7f, 'an ASCII position');
  return s.slice(0, index) + String.fromCharCode(code ^ 0x01) + s.slice(index + 1);
}

describe('inbound webhook signature attacks', () => {
  let app: FastifyInstance;
  let body: string;
  before(async () => {
    app = await buildApp(await testConfig(undefined, { shopifyWebhookSecret: SHOPIFY_SECRET }));
    await seedProduct(app, 'MUG-CERAMIC-350', { price: '12.50', stock: 1000 });
    await seedProduct(app, 'TEA-EARLGREY-100', { price: '32.50', stock: 1000 });
    body = JSON.stringify({ ...fixturePayload(), id: 7000000000001 });
  });
  after(() => app.close());

  it('re-serialised body, flipped byte, flipped or wrong-length signature, missing header: all 401 and nothing stored', async () => {
    const good = shopifyHmac(body);
    const goodBytes = Buffer.from(good, 'base64');
    const before = await snapshot(app);
    const cases: [string, string, string | null][] = [
      ['re-serialised body', JSON.stringify(JSON.parse(body), null, 2), good],
      ['keys reordered', JSON.stringify(Object.fromEntries(Object.entries(JSON.parse(body) as object).reverse())), good],
      ['one flipped byte in the body', flipByte(body, 10), good],
      ['one flipped bit in the signature', body, Buffer.from(goodBytes.map((v, i) => (i === 5 ? v ^ 0x01 : v))).toString('base64')],
      ['signature too short', body, goodBytes.subarray(0, 16).toString('base64')],
      ['signature too long', body, Buffer.concat([goodBytes, Buffer.from([0])]).toString('base64')],
      ['signature empty', body, ''],
      ['signature not base64', body, '!!!not-base64!!!'],
      ['hex instead of base64', body, goodBytes.toString('hex')],
      ['another secret', body, shopifyHmac(body, 'not-the-secret')],
      ['missing header', body, null],
    ];
    for (const [label, sentBody, hmac] of cases) {
      const res = await sendInbound(app, sentBody, { hmac });
      assert.equal(res.statusCode, 401, `${label}: ${res.statusCode} ${res.body}`);
      assert.equal(errorBody(res).error_code, 'INVALID_SIGNATURE', label);
    }
    assert.equal(await snapshot(app), before, 'nothing stored');
  });

  it('the same webhook id twice is stored and processed once', async () => {
    const first = await sendInbound(app, body, { webhookId: 'replay-1' });
    const second = await sendInbound(app, body, { webhookId: 'replay-1' });
    assert.equal(first.statusCode, 200);
    assert.equal(second.statusCode, 200);
    const settled = await waitFor(async () => {
      const row = await app.ctx.db.selectFrom('inbound_webhooks').selectAll().where('webhook_id', '=', 'replay-1').executeTakeFirst();
      return row && row.status !== 'received' ? row : undefined;
    });
    assert.equal(settled.status, 'processed', settled.error ?? '');
    const rows = await app.ctx.db.selectFrom('inbound_webhooks').select('id').where('webhook_id', '=', 'replay-1').execute();
    assert.equal(rows.length, 1);
    const orders = await app.ctx.db.selectFrom('orders').select('id').where('external_id', '=', '7000000000001').execute();
    assert.equal(orders.length, 1);
  });

  it('with the database down a signed webhook gets a 5xx (the platform retries), never a 2xx', async (t) => {
    const down = await buildApp(await testConfig(undefined, { shopifyWebhookSecret: SHOPIFY_SECRET }));
    t.after(() => down.close().catch(() => {}));
    await down.ctx.database.close();
    const res = await sendInbound(down, body);
    assert.ok(res.statusCode >= 500, `got ${res.statusCode}`);
  });
});

describe('SSRF: subscription targets', () => {
  const INTERNAL = [
    'http://127.0.0.1/hook',
    'http://2130706433/hook',
    'http://0x7f000001/hook',
    'http://127.1/hook',
    'http://[::1]/hook',
    'http://[::ffff:127.0.0.1]/hook',
    'http://169.254.169.254/latest/meta-data/',
    'http://100.64.0.1/hook',
    'http://10.0.0.1/hook',
    'http://[fd00::1]/hook',
    'http://0.0.0.0/hook',
    'http://localhost/hook',
  ];
  const targets = [...INTERNAL, ...INTERNAL.map((u) => u.replace(/^http:/, 'https:'))];

  it('internal addresses in every spelling are 422 at creation and on update; nothing stored', async (t) => {
    const app = await securityApp(t, { webhookAllowPrivateTargets: false });
    const user: TestUser = await directUser(app);
    const ok = await api(app, user, { method: 'POST', url: '/api/v1/webhooks/subscriptions', payload: { url: 'https://hooks.example.com/in', events: ['order.created'] } });
    assert.equal(ok.statusCode, 201, ok.body);
    const id = ok.json<{ id: number }>().id;
    const before = await snapshot(app);
    for (const url of targets) {
      const created = await api(app, user, { method: 'POST', url: '/api/v1/webhooks/subscriptions', payload: { url, events: ['order.created'] } });
      assert.equal(created.statusCode, 422, `${url}: ${created.statusCode} ${created.body}`);
      const patched = await api(app, user, { method: 'PATCH', url: `/api/v1/webhooks/subscriptions/${id}`, payload: { url } });
      assert.equal(patched.statusCode, 422, `PATCH ${url}: ${patched.statusCode}`);
    }
    assert.equal(await snapshot(app), before);
  });

  it('a public name that resolves to 127.0.0.1 at delivery time is never connected to', async () => {
    let connections = 0;
    const server = net.createServer((s) => {
      connections++;
      s.destroy();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    const resolve: Resolver = (hostname, cb) => cb(null, hostname === 'hooks.example.com' ? [{ address: '127.0.0.1', family: 4 }] : []);
    const agent = createDeliveryAgent({ allowPrivate: false, timeoutMs: 3000, resolve });
    try {
      const result = await sendSignedMessage(
        agent,
        { url: `https://hooks.example.com:${port}/in`, secret: SECRET_WHSEC, messageId: 'msg_rebind', body: '{}' },
        { allowPrivate: false },
      );
      assert.equal(result.success, false);
      assert.equal(result.statusCode, null);
      assert.equal(connections, 0, 'never connected');
    } finally {
      await agent.close();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('a 302 to an internal address is not followed: the target is never contacted', async () => {
    const internal = await startReceiver('/internal');
    const redirector = await startReceiver('/in');
    redirector.respond = () => ({ status: 302, headers: { location: internal.url } });
    // private targets allowed only so the redirector on 127.0.0.1 is reachable at all
    const agent = createDeliveryAgent({ allowPrivate: true, timeoutMs: 3000 });
    try {
      const result = await sendSignedMessage(agent, { url: redirector.url, secret: SECRET_WHSEC, messageId: 'msg_redirect', body: '{}' }, { allowPrivate: true });
      assert.equal(result.success, false);
      assert.equal(result.statusCode, 302);
      assert.equal(redirector.requests.length, 1);
      assert.equal(internal.requests.length, 0, 'redirect target contacted');
    } finally {
      await agent.close();
      await internal.close();
      await redirector.close();
    }
  });
});
