import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { api, errorBody, type TestUser, LogCapture, buildTestApp, createUser, snapshot } from '../helpers/app.ts';

const HELMET_HEADERS: Record<string, string | RegExp> = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'SAMEORIGIN',
  'strict-transport-security': /max-age=\d+/,
  'referrer-policy': 'no-referrer',
  'x-dns-prefetch-control': 'off',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'x-permitted-cross-domain-policies': 'none',
};

function assertHelmet(res: LightMyRequestResponse, label: string): void {
  for (const [name, expected] of Object.entries(HELMET_HEADERS)) {
    const value = res.headers[name];
    assert.ok(typeof value === 'string', `${label}: ${name} missing`);
    if (typeof expected === 'string') assert.equal(value, expected, `${label}: ${name}`);
    else assert.match(value, expected, `${label}: ${name}`);
  }
  assert.equal(res.headers['x-powered-by'], undefined, `${label}: x-powered-by`);
}

describe('response headers and CORS', () => {
  it('API security headers are on success and on every kind of error, including 401 and 429', async (t) => {
    const app = await buildTestApp(t, { rateLimitAnonymous: 2 });
    const user = await createUser(app, { login: false });
    assertHelmet(await api(app, user, { method: 'GET', url: '/api/v1/auth/me' }), '200');
    assertHelmet(await app.inject({ method: 'GET', url: '/api/v1/auth/me' }), '401');
    assertHelmet(await app.inject({ method: 'GET', url: '/api/v1/nothing' }), '404');
    const limited = await app.inject({ method: 'GET', url: '/api/v1/auth/me' });
    assert.equal(limited.statusCode, 429);
    assertHelmet(limited, '429');
    assertHelmet(await app.inject({ method: 'GET', url: '/health' }), 'health');
  });

  it('CORS is off without CORS_ORIGINS: no Access-Control headers, preflight not answered', async (t) => {
    const app = await buildTestApp(t, { corsOrigins: [] });
    const res = await app.inject({ method: 'GET', url: '/health', headers: { origin: 'https://evil.example' } });
    assert.equal(res.headers['access-control-allow-origin'], undefined);
    const preflight = await app.inject({
      method: 'OPTIONS',
      url: '/api/v1/users',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    assert.ok(preflight.statusCode >= 400, `preflight ${preflight.statusCode}`);
    assert.equal(preflight.headers['access-control-allow-origin'], undefined);
  });

  it('with CORS_ORIGINS only the listed origins are allowed, on errors too; preflight works', async (t) => {
    const app = await buildTestApp(t, { corsOrigins: ['https://app.example'] });
    const ok = await app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { origin: 'https://app.example' } });
    assert.equal(ok.statusCode, 401);
    assert.equal(ok.headers['access-control-allow-origin'], 'https://app.example', 'a browser app can read the 401');
    assert.equal(ok.headers['access-control-allow-credentials'], undefined);
    const evil = await app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { origin: 'https://evil.example' } });
    assert.equal(evil.headers['access-control-allow-origin'], undefined);
    const preflight = await app.inject({
      method: 'OPTIONS',
      url: '/api/v1/users',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' },
    });
    assert.equal(preflight.statusCode, 204);
    assert.equal(preflight.headers['access-control-allow-origin'], 'https://app.example');
    assert.match(String(preflight.headers['access-control-allow-methods']), /POST/);
    // a cross-origin sign-in carries its device token in a header (the cookie is SameSite=Strict)
    const signIn = await app.inject({
      method: 'OPTIONS',
      url: '/api/v2/auth/login',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-device-token' },
    });
    assert.equal(signIn.statusCode, 204);
    assert.match(String(signIn.headers['access-control-allow-headers']), /X-Device-Token/i);
  });
});

describe('secrets never reach the logs', () => {
  it('passwords, tokens, Authorization headers and webhook secrets are redacted at every log level', async (t) => {
    const logs = new LogCapture();
    const shopifySecret = 'shopify-secret-value-must-not-leak';
    const app = await buildTestApp(t, { logLevel: 'trace', shopifyWebhookSecret: shopifySecret }, { logStream: logs });
    const admin = await createUser(app, { login: false, admin: true });
    const password = 'SuperSecretPassw0rd!';
    const created = await api(app, admin, {
      method: 'POST',
      url: '/api/v1/users',
      payload: { email: 'logged@example.com', full_name: 'Logged', password },
    });
    assert.equal(created.statusCode, 201);
    const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username: 'logged@example.com', password } });
    const tokens = login.json<{ access_token: string; refresh_token: string }>();
    await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username: 'logged@example.com', password: `${password}-wrong` } });
    await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: tokens.refresh_token } });
    await app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Bearer ${tokens.access_token}` } });
    const sub = await app.inject({
      method: 'POST',
      url: '/api/v1/webhooks/subscriptions',
      headers: { authorization: `Bearer ${tokens.access_token}` },
      payload: { url: 'https://hooks.example.com/in', events: ['order.status_changed'] },
    });
    assert.equal(sub.statusCode, 201, sub.body);
    const whsec = sub.json<{ secret: string }>().secret;
    await app.inject({
      method: 'POST',
      url: '/api/v1/webhooks/orders/create',
      headers: { 'content-type': 'application/json', 'x-shopify-hmac-sha256': 'c2lnbmF0dXJlLXRoYXQtbXVzdC1ub3QtbGVhaw==' },
      payload: '{}',
    });
    // whatever a handler might log on purpose or by accident
    app.log.error({ req: { headers: { authorization: `Bearer ${tokens.access_token}` } }, body: { password, secret: whsec, refresh_token: tokens.refresh_token } }, 'a careless log line');
    const text = logs.text;
    assert.ok(logs.lines.length > 10, 'requests were logged');
    for (const secret of [password, tokens.access_token, tokens.refresh_token, whsec, shopifySecret, 'c2lnbmF0dXJlLXRoYXQtbXVzdC1ub3QtbGVhaw==']) {
      assert.ok(!text.includes(secret), `leaked: ${secret.slice(0, 12)}…`);
    }
    assert.match(text, /\[redacted\]/);
  });
});

describe('resource limits', () => {
  let app: FastifyInstance;
  let user: TestUser;
  let admin: TestUser;
  before(async () => {
    app = await buildTestApp(undefined, { bodyLimitBytes: 64 * 1024, shopifyWebhookSecret: 'nested-json-test-secret' });
    user = await createUser(app, { login: false });
    admin = await createUser(app, { login: false, admin: true });
  });
  after(() => app.close());

  it('page_size=1000000 and other out-of-range pagination is 422 on every list', async () => {
    for (const url of [
      '/api/v1/users?page_size=1000000',
      '/api/v1/orders?page_size=1000000',
      '/api/v1/products?page_size=1000000',
      '/api/v1/webhooks/subscriptions?page_size=1000000',
      '/api/v1/items?limit=1000000',
      '/api/v1/items?skip=-1',
      '/api/v1/users?page=0',
      '/api/v1/users?page=99999999999999999999',
      '/api/v1/orders?page_size=abc',
    ]) {
      const res = await api(app, user, { method: 'GET', url });
      assert.equal(res.statusCode, 422, `${url}: ${res.statusCode} ${res.body}`);
      assert.equal(errorBody(res).error_code, 'VALIDATION_ERROR');
    }
  });

  it('deeply nested JSON is a 4xx, never a 500, on every body route', async () => {
    const depth = 20000;
    const nestedObject = `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
    const nestedArray = `${'['.repeat(depth)}${']'.repeat(depth)}`;
    const inField = (field: string, inner: string) => `{"${field}":${inner}}`;
    const before = await snapshot(app);
    // sign-out everywhere takes no body and succeeds for the caller by design (ending its sessions)
    const bodyRoutes = app.routeTable.filter((r) => ['POST', 'PATCH', 'PUT'].includes(r.method) && !r.url.endsWith('/auth/logout-all'));
    assert.ok(bodyRoutes.length > 10);
    for (const r of bodyRoutes) {
      const url = r.url.replace(/:[a-z_]+/g, '1');
      for (const payload of [nestedObject, nestedArray, inField('items', nestedArray), inField('name', nestedObject), inField('__proto__', nestedObject)]) {
        const res = await api(app, r.auth === 'admin' ? admin : user, {
          method: r.method as 'POST',
          url,
          headers: { 'content-type': 'application/json' },
          payload,
        });
        assert.ok(res.statusCode >= 400 && res.statusCode < 500, `${r.method} ${r.url}: ${res.statusCode} ${res.body.slice(0, 200)}`);
      }
    }
    assert.equal(await snapshot(app), before);
  });

  it('server limits are configured: request, headers and keep-alive timeouts, header size', async () => {
    const server = app.server;
    assert.equal(server.requestTimeout, app.ctx.config.requestTimeoutMs);
    assert.ok(server.requestTimeout > 0 && server.requestTimeout <= 60000);
    assert.ok(server.headersTimeout > 0 && server.headersTimeout <= server.requestTimeout);
    assert.ok(server.keepAliveTimeout > 0);
    assert.equal((server as unknown as { maxHeaderSize?: number }).maxHeaderSize, 16 * 1024);
  });
});

describe('resource limits on a listening server', () => {
  it('a slow-drip request body is cut off by the request timeout', async (t) => {
    const app = await buildTestApp(t, { requestTimeoutMs: 1000 });
    const user = await createUser(app, { login: false });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as net.AddressInfo).port;
    const before = await snapshot(app);
    const started = Date.now();
    const outcome = await new Promise<{ response: string; closedAfter: number; cutByTest: boolean }>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      let response = '';
      let timer: NodeJS.Timeout | undefined;
      let cutByTest = false;
      socket.on('connect', () => {
        socket.write(
          `POST /api/v1/items HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${user.token}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"name":"`,
        );
        // one byte every 200 ms: the body would take 200 s to arrive
        timer = setInterval(() => socket.write('a'), 200);
      });
      socket.on('data', (d) => (response += d.toString()));
      const done = () => {
        clearInterval(timer);
        resolve({ response, closedAfter: Date.now() - started, cutByTest });
      };
      socket.on('close', done);
      socket.on('error', () => socket.destroy());
      // a server that never cut the request off: the test ends it, and says so
      setTimeout(() => {
        cutByTest = true;
        socket.destroy();
      }, 60000).unref();
    });
    assert.ok(!outcome.cutByTest, `the server closed the connection (after ${outcome.closedAfter} ms)`);
    assert.ok(outcome.closedAfter >= 900, `not before the timeout: ${outcome.closedAfter} ms`);
    assert.ok(outcome.response === '' || /^HTTP\/1\.1 408/.test(outcome.response), outcome.response.slice(0, 100));
    assert.equal(await snapshot(app), before, 'nothing stored');
  });

  it('headers over 16 KiB are refused with 431', async (t) => {
    const app = await buildTestApp(t);
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as net.AddressInfo).port;
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path: '/health', headers: { 'x-padding': 'p'.repeat(20 * 1024) } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
    });
    assert.equal(status, 431);
  });
});

describe('issue 44: headers by route, Node-level 400s and dates in the error shape', () => {
  let app: FastifyInstance;
  let admin: TestUser;
  before(async () => {
    app = await buildTestApp(undefined);
    admin = await createUser(app, { admin: true, login: false });
  });
  after(() => app.close());

  it('Cache-Control: no-store by the route, however the path is spelt (/%61pi/v1/auth/me)', async () => {
    for (const url of ['/api/v1/auth/me', '/%61pi/v1/auth/me', '/api/v1/%61uth/me', '/%61pi/v2/users', '/%61pi/v1/nothing-here']) {
      const res = await api(app, admin, { method: 'GET', url });
      assert.equal(res.headers['cache-control'], 'no-store', `${url}: ${res.statusCode}`);
    }
    assert.notEqual((await app.inject({ method: 'GET', url: '/health' })).headers['cache-control'], 'no-store');
  });

  it('out-of-range dates are 422, not a 500 from the database (created_from=0000-01-01, recover since=0000-01-01T00:00:00Z)', async () => {
    for (const url of ['/api/v1/admin/orders?created_from=0000-01-01', '/api/v2/admin/orders?created_to=0000-12-31', '/api/v1/admin/orders?created_from=0001-01-01T00:00:00%2B01:00']) {
      const res = await api(app, admin, { method: 'GET', url });
      assert.equal(res.statusCode, 422, `${url}: ${res.body}`);
      assert.equal(errorBody(res).error_code, 'VALIDATION_ERROR');
    }
    assert.equal((await api(app, admin, { method: 'GET', url: '/api/v1/admin/orders?created_from=0001-01-01' })).statusCode, 200);
    const recover = await api(app, admin, { method: 'POST', url: '/api/v1/webhooks/subscriptions/1/recover', payload: { since: '0000-01-01T00:00:00Z' } });
    assert.equal(recover.statusCode, 422, recover.body);
    assert.equal(errorBody(recover).error_code, 'VALIDATION_ERROR');
  });

  it('an HTTP/1.1 request without Host is 400 in the {detail, error_code} shape; HTTP/1.0 needs none', async (t) => {
    const server = await buildTestApp(t);
    await server.listen({ port: 0, host: '127.0.0.1' });
    const port = (server.server.address() as net.AddressInfo).port;
    const raw = (request: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = net.connect(port, '127.0.0.1', () => socket.end(request));
        let data = '';
        socket.on('data', (chunk) => (data += chunk.toString()));
        socket.on('close', () => resolve(data));
        socket.on('error', reject);
      });
    const answer = await raw('GET /api/v1/auth/me HTTP/1.1\r\nConnection: close\r\n\r\n');
    assert.match(answer, /^HTTP\/1\.1 400 /);
    const [head, body] = answer.split('\r\n\r\n');
    assert.match(head, /content-type: application\/json/i);
    assert.match(head, /cache-control: no-store/i);
    assert.deepEqual(JSON.parse(body), { detail: 'Missing Host header', error_code: 'BAD_REQUEST' });
    assert.match(await raw('GET /health HTTP/1.0\r\n\r\n'), /^HTTP\/1\.1 200 /);
  });
});
