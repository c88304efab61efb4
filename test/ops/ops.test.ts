import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, errorBody, type TestUser } from '../helpers/app.ts';

describe('operations endpoints and framework errors', () => {
  let app: FastifyInstance;
  let user: TestUser;

  before(async () => {
    app = await buildTestApp(undefined);
    user = await createUser(app);
  });
  after(() => app.close());

  it('GET /health is 200 {status: ok}', async () => {
    const res = await app.inject({ method: 'GET', url: '/health' });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { status: 'ok' });
  });

  it('GET /ready is 200 with every check ok', async () => {
    const res = await app.inject({ method: 'GET', url: '/ready' });
    assert.equal(res.statusCode, 200);
    const body = res.json<{ status: string; checks: Record<string, string> }>();
    assert.equal(body.status, 'ok');
    assert.equal(body.checks.database, 'ok');
    assert.equal(body.checks.queue, 'ok');
    for (const [name, state] of Object.entries(body.checks)) assert.equal(state, 'ok', `check ${name}`);
  });

  it('GET /metrics is Prometheus text with the request-duration histogram of routes served', async () => {
    await api(app, user, { method: 'GET', url: '/api/v1/auth/me' });
    const res = await app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain/);
    assert.match(res.body, /^# HELP http_request_duration_seconds /m);
    assert.match(res.body, /^# TYPE http_request_duration_seconds histogram$/m);
    assert.match(res.body, /^http_request_duration_seconds_count\{[^}]*route="\/api\/v1\/auth\/me"[^}]*status_code="200"[^}]*\} [1-9]/m);
    assert.match(res.body, /^process_cpu_user_seconds_total /m, 'default process metrics');
  });

  it('operations routes are not rate-limited and need no token', async () => {
    const limited = await api(app, user, { method: 'GET', url: '/api/v1/auth/me' });
    assert.ok(limited.headers['x-ratelimit-limit'], 'an API route carries the rate-limit headers');
    for (const url of ['/health', '/ready', '/metrics']) {
      const res = await app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 200, url);
      assert.equal(res.headers['x-ratelimit-limit'], undefined, url);
    }
  });

  it('an unknown route is 404 NOT_FOUND in the error shape', async () => {
    const res = await app.inject({ method: 'GET', url: '/api/v1/no-such-thing?x=1' });
    assert.equal(res.statusCode, 404);
    const body = errorBody(res);
    assert.equal(body.error_code, 'NOT_FOUND');
    assert.equal(body.detail, 'Route GET /api/v1/no-such-thing not found');
    assert.match(String(res.headers['content-type']), /^application\/json/);
  });

  it('malformed JSON is 422 VALIDATION_ERROR', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      headers: { 'content-type': 'application/json' },
      payload: '{"username": "a@example.com", "password": ',
    });
    assert.equal(res.statusCode, 422);
    const body = errorBody(res);
    assert.equal(body.error_code, 'VALIDATION_ERROR');
    assert.equal(body.detail, 'Malformed JSON in request body');
    assert.deepEqual((body.errors as { loc: unknown[]; type: string }[]).map((e) => [e.loc, e.type]), [[['body'], 'json_invalid']]);
  });

  it('an empty body sent as application/json is no body: DELETE and body-less actions work, a route that needs a body is 422', async () => {
    const admin = await createUser(app, { admin: true });
    const json = { 'content-type': 'application/json' };
    const victim = await createUser(app);
    const deleted = await api(app, admin, { method: 'DELETE', url: `/api/v1/users/${victim.user.id}`, headers: { ...json, 'content-length': '0' } });
    assert.equal(deleted.statusCode, 204, deleted.body);
    assert.equal(deleted.body, '');
    const item = await api(app, user, { method: 'POST', url: '/api/v1/items', payload: { name: 'Lamp', price: 5 } });
    assert.equal(item.statusCode, 201);
    const gone = await api(app, user, { method: 'DELETE', url: `/api/v1/items/${item.json().id}`, headers: json, payload: '' });
    assert.equal(gone.statusCode, 204, gone.body);
    const session = await createUser(app);
    const logout = await app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: json, payload: '' });
    assert.equal(logout.statusCode, 422, 'logout needs its refresh token');
    assert.equal(errorBody(logout).error_code, 'VALIDATION_ERROR');
    const noBody = await api(app, admin, { method: 'POST', url: '/api/v1/users', headers: json, payload: '' });
    assert.equal(noBody.statusCode, 422);
    assert.equal(errorBody(noBody).error_code, 'VALIDATION_ERROR');
    const me = await api(app, session, { method: 'GET', url: '/api/v1/auth/me', headers: json });
    assert.equal(me.statusCode, 200);
  });

  it('a path id no row can have (0, negative, past the integer range) is that resource\'s 404; a non-integer is 422', async () => {
    const admin = await createUser(app, { admin: true });
    const cases: [string, string][] = [
      ['/api/v1/users/0', 'User not found'],
      ['/api/v1/users/-5', 'User not found'],
      ['/api/v1/users/2147483648', 'User not found'],
      ['/api/v1/items/0', 'Item not found'],
      ['/api/v1/items/99999999999', 'Item not found'],
      ['/api/v1/products/-1', 'Product not found'],
      ['/api/v1/webhooks/subscriptions/0', 'Subscription not found'],
    ];
    for (const [url, detail] of cases) {
      const res = await api(app, admin, { method: 'GET', url });
      assert.equal(res.statusCode, 404, url);
      assert.deepEqual(errorBody(res), { detail, error_code: 'NOT_FOUND' }, url);
    }
    const del = await api(app, admin, { method: 'DELETE', url: '/api/v1/users/0' });
    assert.equal(del.statusCode, 404);
    // the role check still comes first: a non-admin is 403 whatever the id
    const notAdmin = await api(app, user, { method: 'DELETE', url: '/api/v1/users/0' });
    assert.equal(notAdmin.statusCode, 403);
    const bad = await api(app, admin, { method: 'GET', url: '/api/v1/users/1.5' });
    assert.equal(bad.statusCode, 422);
  });

  it('a body over the limit is 413 PAYLOAD_TOO_LARGE and nothing is written', async () => {
    const before = await app.ctx.db.selectFrom('users').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    const limit = app.ctx.config.bodyLimitBytes;
    const res = await api(app, user, {
      method: 'PATCH',
      url: `/api/v1/users/${user.user.id}`,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ full_name: 'x'.repeat(limit) }),
    });
    assert.equal(res.statusCode, 413);
    const body = errorBody(res);
    assert.equal(body.error_code, 'PAYLOAD_TOO_LARGE');
    assert.equal(body.detail, 'Request body is too large');
    const after = await app.ctx.db.selectFrom('users').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    assert.equal(after.n, before.n);
    const row = await app.ctx.db.selectFrom('users').select('full_name').where('id', '=', user.user.id).executeTakeFirstOrThrow();
    assert.equal(row.full_name, user.user.full_name);
  });

  it('a body just under the limit is read where a route takes that much (the platform webhook keeps BODY_LIMIT_BYTES)', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/webhooks/orders/create',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ note: 'x'.repeat(app.ctx.config.bodyLimitBytes - 100) }),
    });
    // read whole, then refused for its missing signature: not 413
    assert.notEqual(res.statusCode, 413, res.body.slice(0, 200));
    assert.ok(['INVALID_SIGNATURE', 'WEBHOOK_NOT_CONFIGURED'].includes(errorBody(res).error_code), res.body.slice(0, 200));
  });

  it('GET / redirects to /docs, which serves the interactive documentation', async () => {
    const res = await app.inject({ method: 'GET', url: '/' });
    assert.equal(res.statusCode, 302);
    assert.equal(res.headers.location, '/docs');
    const docs = await app.inject({ method: 'GET', url: '/docs' });
    assert.equal(docs.statusCode, 200);
    assert.match(docs.body, /swagger-ui/i);
  });

  it('GET /openapi.json is the OpenAPI 3.1 document', async () => {
    const res = await app.inject({ method: 'GET', url: '/openapi.json' });
    assert.equal(res.statusCode, 200);
    const doc = res.json<{ openapi: string; paths: Record<string, unknown> }>();
    assert.equal(doc.openapi, '3.1.0');
    assert.ok(doc.paths['/api/v1/auth/me']);
    assert.ok(doc.paths['/health']);
  });
});

describe('database unavailable', () => {
  it('/ready answers 503 promptly and API routes answer 503 SERVICE_UNAVAILABLE, /health stays 200', async (t) => {
    const app = await buildTestApp(t);
    const admin = await createUser(app, { admin: true });
    await app.ctx.database.close();

    const started = Date.now();
    const ready = await app.inject({ method: 'GET', url: '/ready' });
    // a liveness bound, not a speed target: the answer comes, its checks do not hang on the database
    assert.ok(Date.now() - started < 10000, 'readiness answers, its 2 s check timeout well within 10 s');
    assert.equal(ready.statusCode, 503);
    const body = ready.json<{ status: string; checks: Record<string, string> }>();
    assert.equal(body.status, 'unavailable');
    assert.equal(body.checks.database, 'unavailable');

    const users = await api(app, admin, { method: 'GET', url: '/api/v1/users' });
    assert.equal(users.statusCode, 503);
    assert.deepEqual(errorBody(users), { detail: 'Service temporarily unavailable', error_code: 'SERVICE_UNAVAILABLE' });
    assert.equal(users.headers['retry-after'], '5');

    const health = await app.inject({ method: 'GET', url: '/health' });
    assert.equal(health.statusCode, 200);
  });
});

describe('database refusing connections (PostgreSQL)', { skip: !process.env.TEST_DATABASE_URL && 'needs TEST_DATABASE_URL' }, () => {
  it('connections dropped and refused: 503 on /ready and on API routes; both recover when it is back', async (t) => {
    const app = await buildTestApp(t);
    const admin = await createUser(app, { admin: true });
    const name = new URL(String(app.ctx.database.connectionString)).pathname.slice(1);
    const server = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await server.connect();
    t.after(() => server.end());
    // what a database outage looks like to the pool: open connections terminated, new ones refused
    await server.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
    await server.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);

    const ready = await app.inject({ method: 'GET', url: '/ready' });
    assert.equal(ready.statusCode, 503);
    assert.equal(ready.json<{ checks: Record<string, string> }>().checks.database, 'unavailable');
    for (let i = 0; i < 3; i++) {
      const users = await api(app, admin, { method: 'GET', url: '/api/v1/users' });
      assert.equal(users.statusCode, 503, users.body);
      assert.equal(errorBody(users).error_code, 'SERVICE_UNAVAILABLE');
    }

    await server.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
    assert.equal((await app.inject({ method: 'GET', url: '/ready' })).statusCode, 200);
    const users = await api(app, admin, { method: 'GET', url: '/api/v1/users' });
    assert.equal(users.statusCode, 200, users.body);
  });
});
