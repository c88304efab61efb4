import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, errorBody, type TestUser } from '../helpers/app.ts';

describe('operations routes and framework errors', () => {
  let app: FastifyInstance;
  let alice: TestUser;
  before(async () => {
    app = await buildTestApp(undefined);
    alice = await createUser(app);
  });
  after(() => app.close());

  it('GET /health is 200 {status: ok}', async () => {
    const res = await app.inject({ method: 'GET', url: '/health' });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { status: 'ok' });
  });

  it('GET /ready is 200 with the database and queue checks', async () => {
    const res = await app.inject({ method: 'GET', url: '/ready' });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json<{ status: string; checks: Record<string, string> }>();
    assert.equal(body.checks.database, 'ok');
    assert.equal(body.checks.queue, 'ok');
    assert.ok(['ok', 'degraded'].includes(body.status));
  });

  it('GET /metrics is Prometheus text with request durations by route', async () => {
    await api(app, alice, { method: 'GET', url: '/api/v1/auth/me' });
    const res = await app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain/);
    assert.match(res.body, /http_request_duration_seconds_bucket\{[^}]*route="\/api\/v1\/auth\/me"/);
    assert.match(res.body, /process_resident_memory_bytes/);
  });

  it('GET / redirects to /docs; /openapi.json is the document', async () => {
    const root = await app.inject({ method: 'GET', url: '/' });
    assert.equal(root.statusCode, 302);
    assert.equal(root.headers.location, '/docs');
    const doc = await app.inject({ method: 'GET', url: '/openapi.json' });
    assert.equal(doc.statusCode, 200);
    assert.equal(doc.json<{ openapi: string }>().openapi, '3.1.0');
  });

  it('unknown routes, malformed JSON and oversized bodies have the error body', async () => {
    const missing = await app.inject({ method: 'GET', url: '/api/v1/nothing-here' });
    assert.equal(missing.statusCode, 404);
    assert.equal(errorBody(missing).error_code, 'NOT_FOUND');

    const malformed = await app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      headers: { 'content-type': 'application/json' },
      payload: '{"username": "a@b.c", "password": ',
    });
    assert.equal(malformed.statusCode, 422);
    assert.equal(errorBody(malformed).error_code, 'VALIDATION_ERROR');

    const huge = await api(app, alice, {
      method: 'POST',
      url: '/api/v1/items',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'x', price: 1, description: 'y'.repeat(2 * 1024 * 1024) }),
    });
    assert.equal(huge.statusCode, 413);
    assert.equal(errorBody(huge).error_code, 'PAYLOAD_TOO_LARGE');
    const stored = await app.ctx.db.selectFrom('items').select('id').where('user_id', '=', alice.user.id).execute();
    assert.equal(stored.length, 0, 'nothing stored');
  });
});

describe('database unreachable', () => {
  it('/ready answers 503 and API routes 503 SERVICE_UNAVAILABLE, promptly, never 500', async (t) => {
    const app = await buildTestApp(t);
    const alice = await createUser(app);
    // warm the token cache path, then take the database away underneath the running app
    assert.equal((await api(app, alice, { method: 'GET', url: '/api/v1/auth/me' })).statusCode, 200);
    await app.ctx.database.close();

    const started = Date.now();
    const ready = await app.inject({ method: 'GET', url: '/ready' });
    assert.equal(ready.statusCode, 503, ready.body);
    const body = ready.json<{ status: string; checks: Record<string, string> }>();
    assert.equal(body.status, 'unavailable');
    assert.equal(body.checks.database, 'unavailable');

    const me = await api(app, alice, { method: 'GET', url: '/api/v1/users' });
    assert.equal(me.statusCode, 503, me.body);
    assert.equal(errorBody(me).error_code, 'SERVICE_UNAVAILABLE');
    assert.ok(Date.now() - started < 5000, 'answered promptly');

    const health = await app.inject({ method: 'GET', url: '/health' });
    assert.equal(health.statusCode, 200, 'the process itself is alive');
  });
});
