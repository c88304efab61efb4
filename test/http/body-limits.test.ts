import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { largestJsonBytes, MIN_BODY_LIMIT } from '../../src/http/body-limits.ts';
import { MAX_JSON_DEPTH } from '../../src/http/errors.ts';
import { nestedDeeperThan } from '../../src/http/validation.ts';
import { api, buildTestApp, createUser, errorBody, type TestUser } from '../helpers/app.ts';

const json = { 'content-type': 'application/json' };
const KiB = 1024;

describe('request body limits and the nesting guard', () => {
  let app: FastifyInstance;
  let user: TestUser;
  before(async () => {
    app = await buildTestApp(undefined, { shopifyWebhookSecret: 'body-limits-test-secret' });
    user = await createUser(app);
  });
  after(() => app.close());

  it('each route reads at most its largest valid body: the sign-in routes a few KiB, the platform webhook 1 MiB', async () => {
    const bodyRoutes = app.routeTable.filter((r) => ['POST', 'PATCH', 'PUT', 'DELETE'].includes(r.method));
    for (const r of bodyRoutes) {
      const largest = r.body ? largestJsonBytes(r.body as never) : 0;
      const limit = r.bodyLimit;
      if (/^\/api\/v\d+\/webhooks\/orders\/(create|cancelled)$/.test(r.url)) {
        assert.equal(limit, app.ctx.config.bodyLimitBytes, `${r.url}: the platform webhooks keep the service-wide limit`);
        continue;
      }
      assert.ok(limit !== undefined && limit >= Math.min(largest, app.ctx.config.bodyLimitBytes), `${r.method} ${r.url}: ${limit} < ${largest}`);
      assert.ok(limit! <= Math.max(MIN_BODY_LIMIT, largest + KiB), `${r.method} ${r.url}: ${limit} is more than its largest body ${largest}`);
    }
    for (const url of ['/api/v1/auth/login', '/api/v1/auth/refresh', '/api/v1/auth/password-recovery']) {
      const r = app.routeTable.find((x) => x.method === 'POST' && x.url === url);
      assert.ok(r?.bodyLimit !== undefined && r.bodyLimit <= 64 * KiB, `${url}: ${r?.bodyLimit}`);
    }
  });

  it('the largest valid sign-in body is read (401 for an unknown user); a larger one is 413', async () => {
    const wide = '€'.repeat(1); // three bytes in UTF-8
    const largest = {
      username: `${'u'.repeat(300)}@example.com`,
      password: wide.repeat(1024),
      grant_type: 'password',
      scope: 's'.repeat(1024),
      client_id: 'c'.repeat(256),
      client_secret: wide.repeat(256),
    };
    const ok = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: largest });
    assert.equal(ok.statusCode, 401, ok.body);
    const tooLarge = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username: 'x@example.com', password: 'p'.repeat(64 * KiB) } });
    assert.equal(tooLarge.statusCode, 413, tooLarge.body);
    assert.equal(errorBody(tooLarge).error_code, 'PAYLOAD_TOO_LARGE');
  });

  it('reads every valid body however the client encodes it: \\uXXXX escapes (Python, PHP), surrogate pairs, pretty-printed', async () => {
    // JSON.stringify writes raw UTF-8; Python's json.dumps (ensure_ascii, the default) escapes every
    // non-ASCII character, an astral one as a surrogate pair of 12 bytes
    const asciiOnly = (value: unknown, indent?: number) =>
      JSON.stringify(value, null, indent).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    const send = (url: string, payload: string) => api(app, user, { method: 'POST', url, headers: json, payload });

    // the case: an item's name and description at their maximum, in CJK text (3,643 bytes escaped)
    // (json.dumps separates with ', ' and ': ')
    const cjk = `{"name": ${asciiOnly('名'.repeat(100))}, "description": ${asciiOnly('日'.repeat(500))}, "price": 1}`;
    assert.equal(Buffer.byteLength(cjk), 3643);
    const item = await send('/api/v1/items', cjk);
    assert.equal(item.statusCode, 201, item.body);
    assert.equal((item.json() as { name: string }).name, '名'.repeat(100));

    // astral characters (one code point each for maxLength), escaped and pretty-printed
    const astral = asciiOnly({ name: '😀'.repeat(100), description: '𝄞'.repeat(500), price: 999999999999.99 }, 4);
    assert.ok(Buffer.byteLength(astral) > 7 * KiB, `${Buffer.byteLength(astral)}`);
    const wide = await send('/api/v1/items', astral);
    assert.equal(wide.statusCode, 201, wide.body);

    // the deepest body: an order of 100 lines with a 500-character astral address, pretty-printed;
    // the lines name products that do not exist, so it is read and refused by the rules, not the size
    const order = asciiOnly({ items: Array.from({ length: 100 }, (_, i) => ({ product_id: 2_000_000_000 + i, quantity: 1000 })), shipping_address: '🏠'.repeat(500) }, 4);
    const placed = await send('/api/v1/orders', order);
    assert.notEqual(placed.statusCode, 413, placed.body);
    assert.equal(errorBody(placed).error_code, 'INVALID_PRODUCT');

    // the sign-in form: a 4-byte character percent-encoded is 12 bytes too
    const form = new URLSearchParams({ username: 'nobody@example.com', password: '😀'.repeat(1024) }).toString();
    const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: form });
    assert.equal(login.statusCode, 401, login.body);
  });

  it('a 1 MiB deeply nested body is refused, anonymous and authenticated, with the error shape', async () => {
    const nested = (n: number) => `{"username":${'['.repeat(n)}${']'.repeat(n)},"password":"x"}`;
    const deep = nested(512 * KiB);
    const anonymous = await app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: json, payload: deep });
    assert.equal(anonymous.statusCode, 413, anonymous.body);
    assert.equal(errorBody(anonymous).error_code, 'PAYLOAD_TOO_LARGE');
    const authenticated = await api(app, user, { method: 'POST', url: '/api/v1/items', headers: json, payload: `{"name":${'['.repeat(512 * KiB)}${']'.repeat(512 * KiB)},"price":1}` });
    assert.equal(authenticated.statusCode, 413, authenticated.body);
  });

  it('a body within the limit but nested deeper than the guard allows is 400 before it is parsed', async () => {
    const n = MAX_JSON_DEPTH + 1;
    const res = await api(app, user, { method: 'POST', url: '/api/v1/items', headers: json, payload: `{"name":${'['.repeat(n)}${']'.repeat(n)},"price":1}` });
    assert.equal(res.statusCode, 400, res.body);
    assert.deepEqual(errorBody(res), { detail: `Request body is nested more than ${MAX_JSON_DEPTH} levels deep`, error_code: 'BAD_REQUEST' });
    // brackets inside strings are text, not nesting
    const text = await api(app, user, { method: 'POST', url: '/api/v1/items', headers: json, payload: JSON.stringify({ name: '['.repeat(90), description: '{"\\"['.repeat(50), price: 1 }) });
    assert.equal(text.statusCode, 201, text.body);
  });

  it('nestedDeeperThan counts objects and arrays outside strings', () => {
    assert.equal(nestedDeeperThan('[[[]]]', 3), false);
    assert.equal(nestedDeeperThan('[[[[]]]]', 3), true);
    assert.equal(nestedDeeperThan('{"a":{"b":{"c":{}}}}', 3), true);
    assert.equal(nestedDeeperThan('{"a":"[[[[[\\"[[[["}', 1), false);
    assert.equal(nestedDeeperThan('[{},{},{},[],[]]', 2), false);
  });
});
