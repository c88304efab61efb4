import { describe, it } from 'node:test';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { Redis } from 'ioredis';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../src/app.ts';
import type { Config } from '../../src/config.ts';
import { createCounterRedis, redisOrMemory } from '../../src/http/rate-limits.ts';
import { errorBody, waitFor, LogCapture, REDIS_URL, buildTestApp, createUser, redisAvailable, uniquePrefix } from '../helpers/app.ts';
import { redisProxy } from '../helpers/redis-proxy.ts';

const SECRET = 'rate-limit-test-secret-0123456789abcdef';

async function limitedApp(t: TestContext, overrides: Partial<Config> = {}, logs?: LogCapture): Promise<FastifyInstance> {
  const app = await buildTestApp(t, {
    redisUrl: undefined,
    rateLimitAnonymous: 20,
    rateLimitAuthenticated: 100,
    rateLimitWebhook: 50,
    rateLimitKeyPrefix: uniquePrefix(),
    jwtSecret: SECRET,
    logLevel: logs ? 'info' : 'silent',
    ...overrides,
  }, { logStream: logs });
  // a stand-in for the inbound webhook route: the same route options, a trivial handler
  app.post('/test-webhook', { config: { auth: 'signature', rateLimitBucket: 'webhook' } }, async () => ({ ok: true }));
  return app;
}

function assertLimitHeaders(res: LightMyRequestResponse, limit: number, remaining: number, window = 60): void {
  assert.equal(res.headers['x-ratelimit-limit'], String(limit), 'X-RateLimit-Limit');
  assert.equal(res.headers['x-ratelimit-remaining'], String(remaining), 'X-RateLimit-Remaining');
  const reset = Number(res.headers['x-ratelimit-reset']);
  assert.ok(Number.isInteger(reset) && reset >= 1 && reset <= window, `X-RateLimit-Reset ${res.headers['x-ratelimit-reset']}`);
}

async function listening(app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(app.server.address() as net.AddressInfo).port}`;
}

/**
 * Until /ready's Redis check reads `state`; `ok`: the app counts in Redis. Start-up waits at most 1.5 s for the
 * connection and a busy machine can take longer (counts are per process till then), so a test counting exactly waits.
 */
async function redisCheckReads(app: FastifyInstance, state: 'ok' | 'degraded'): Promise<void> {
  await waitFor(async () => ((await app.inject({ method: 'GET', url: '/ready' })).json<{ checks: Record<string, string> }>().checks.redis === state ? true : undefined));
}

function assert429(res: LightMyRequestResponse, window = 60): void {
  assert.equal(res.statusCode, 429, res.body);
  const body = errorBody(res);
  assert.equal(body.error_code, 'RATE_LIMITED');
  assert.match(body.detail, /^Rate limit exceeded/);
  const retryAfter = Number(res.headers['retry-after']);
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= window, `Retry-After ${res.headers['retry-after']}`);
  assert.equal(res.headers['x-ratelimit-remaining'], '0');
}

describe('rate limiting (in memory)', () => {
  it('the 21st anonymous request in a window is 429 with Retry-After; every response carries the headers', async (t) => {
    const app = await limitedApp(t);
    for (let i = 1; i <= 20; i++) {
      // a public route (200/401 mix) and a protected one without a token (401): both are counted
      const res =
        i % 2 === 0
          ? await app.inject({ method: 'GET', url: '/api/v1/users' })
          : await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username: 'x@example.com', password: 'wrong-password' } });
      assert.equal(res.statusCode, 401, res.body);
      assertLimitHeaders(res, 20, 20 - i);
    }
    assert429(await app.inject({ method: 'GET', url: '/api/v1/users' }));
    assert429(await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username: 'x@example.com', password: 'x' } }));
  });

  it('404, 422 and 401 responses are counted and carry the headers', async (t) => {
    const app = await limitedApp(t);
    const notFound = await app.inject({ method: 'GET', url: '/api/v1/no-such-route' });
    assert.equal(notFound.statusCode, 404);
    assertLimitHeaders(notFound, 20, 19);
    const invalid = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username: 'x' } });
    assert.equal(invalid.statusCode, 422);
    assertLimitHeaders(invalid, 20, 18);
  });

  it('a forged or expired token is counted against the IP, not a user bucket', async (t) => {
    const app = await limitedApp(t);
    for (let i = 0; i < 20; i++) {
      const res = await app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Bearer forged.${i}.token` } });
      assert.equal(res.statusCode, 401);
      assertLimitHeaders(res, 20, 19 - i);
    }
    assert429(await app.inject({ method: 'GET', url: '/api/v1/auth/me' }));
  });

  it('an authenticated caller has its own bucket of 100 keyed by user id, whatever the IP', async (t) => {
    const app = await limitedApp(t, { rateLimitAuthenticated: 30 });
    const alice = await createUser(app, { login: false });
    const bob = await createUser(app, { login: false });
    // exhaust the IP bucket first: authenticated requests are unaffected
    for (let i = 0; i < 20; i++) await app.inject({ method: 'GET', url: '/api/v1/auth/me' });
    assert429(await app.inject({ method: 'GET', url: '/api/v1/auth/me' }));
    for (let i = 1; i <= 30; i++) {
      const res = await app.inject({
        method: 'GET',
        url: '/api/v1/auth/me',
        headers: { ...alice.auth, 'x-forwarded-for': `10.0.0.${i}` },
        remoteAddress: `192.0.2.${i}`,
      });
      assert.equal(res.statusCode, 200, res.body);
      assertLimitHeaders(res, 30, 30 - i);
    }
    assert429(await app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: alice.auth, remoteAddress: '198.51.100.7' }));
    // another user is not affected
    const other = await app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: bob.auth });
    assert.equal(other.statusCode, 200);
    assertLimitHeaders(other, 30, 29);
  });

  it('rotating X-Forwarded-For does not reset the anonymous bucket without TRUST_PROXY', async (t) => {
    const app = await limitedApp(t, { trustProxy: false });
    for (let i = 0; i < 20; i++) {
      const res = await app.inject({ method: 'GET', url: '/api/v1/users', headers: { 'x-forwarded-for': `203.0.113.${i}` } });
      assert.equal(res.statusCode, 401);
    }
    assert429(await app.inject({ method: 'GET', url: '/api/v1/users', headers: { 'x-forwarded-for': '203.0.113.200' } }));
  });

  it('with TRUST_PROXY the client IP comes from X-Forwarded-For', async (t) => {
    const app = await limitedApp(t, { trustProxy: true });
    for (let i = 0; i < 20; i++) {
      const res = await app.inject({ method: 'GET', url: '/api/v1/users', headers: { 'x-forwarded-for': '203.0.113.1' } });
      assertLimitHeaders(res, 20, 19 - i);
    }
    assert429(await app.inject({ method: 'GET', url: '/api/v1/users', headers: { 'x-forwarded-for': '203.0.113.1' } }));
    const other = await app.inject({ method: 'GET', url: '/api/v1/users', headers: { 'x-forwarded-for': '203.0.113.2' } });
    assert.equal(other.statusCode, 401);
    assertLimitHeaders(other, 20, 19);
  });

  it('with TRUST_PROXY=true a client cannot pick its IP: entries it writes before the balancer\'s are ignored', async (t) => {
    // the balancer (the immediate peer, 127.0.0.1 here) appends the address it saw to what the client sent
    const app = await limitedApp(t, { trustProxy: true });
    for (let i = 0; i < 20; i++) {
      const res = await app.inject({ method: 'GET', url: '/api/v1/users', headers: { 'x-forwarded-for': `198.18.0.${i}, 203.0.113.5` } });
      assertLimitHeaders(res, 20, 19 - i);
    }
    assert429(await app.inject({ method: 'GET', url: '/api/v1/users', headers: { 'x-forwarded-for': '198.18.9.9, 203.0.113.5' } }));
  });

  it('with TRUST_PROXY as a list of proxies, the client IP is the right-most address that is not one of them', async (t) => {
    const app = await limitedApp(t, { trustProxy: 'loopback,10.0.0.0/8' });
    for (let i = 0; i < 20; i++) {
      const res = await app.inject({ method: 'GET', url: '/api/v1/users', headers: { 'x-forwarded-for': `198.18.0.${i}, 203.0.113.6, 10.1.2.3` } });
      assertLimitHeaders(res, 20, 19 - i);
    }
    assert429(await app.inject({ method: 'GET', url: '/api/v1/users', headers: { 'x-forwarded-for': '203.0.113.6, 10.9.9.9' } }));
    const other = await app.inject({ method: 'GET', url: '/api/v1/users', headers: { 'x-forwarded-for': '203.0.113.7, 10.1.2.3' } });
    assertLimitHeaders(other, 20, 19);
  });

  it('health, readiness, metrics, docs and the OpenAPI document are not limited', async (t) => {
    const app = await limitedApp(t, { rateLimitAnonymous: 1 });
    for (let i = 0; i < 3; i++) {
      for (const url of ['/health', '/ready', '/metrics', '/openapi.json', '/docs', '/docs/json']) {
        const res = await app.inject({ method: 'GET', url });
        assert.ok(res.statusCode < 400, `${url}: ${res.statusCode}`);
        assert.equal(res.headers['x-ratelimit-limit'], undefined, url);
      }
    }
  });

  it('the webhook route has its own higher bucket, separate from the anonymous one', async (t) => {
    const app = await limitedApp(t);
    for (let i = 0; i < 20; i++) await app.inject({ method: 'GET', url: '/api/v1/users' });
    assert429(await app.inject({ method: 'GET', url: '/api/v1/users' }));
    for (let i = 1; i <= 50; i++) {
      const res = await app.inject({ method: 'POST', url: '/test-webhook', payload: {} });
      assert.equal(res.statusCode, 200);
      assertLimitHeaders(res, 50, 50 - i);
    }
    assert429(await app.inject({ method: 'POST', url: '/test-webhook', payload: {} }));
  });
});

describe('rate limiting (Redis)', () => {
  it('on one instance with Redis the count, the headers and the 429 are exact, concurrent requests too', async (t) => {
    if (!(await redisAvailable())) return t.skip(`no Redis at ${REDIS_URL}`);
    const prefix = uniquePrefix();
    // a window no busy machine outlasts: the 120 requests all fall in one
    const window = 3600;
    const app = await limitedApp(t, { redisUrl: REDIS_URL, rateLimitKeyPrefix: prefix, rateLimitWindowSeconds: window });
    await redisCheckReads(app, 'ok');
    const alice = await createUser(app, { login: false });
    const me = () => app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: alice.auth });
    for (let i = 1; i <= 30; i++) {
      const res = await me();
      assert.equal(res.statusCode, 200, `request ${i}: ${res.body}`);
      assertLimitHeaders(res, 100, 100 - i, window);
    }
    // 90 more at once: exactly 70 pass, each told what is left of the 70
    const burst = await Promise.all(Array.from({ length: 90 }, me));
    const passed = burst.filter((r) => r.statusCode === 200);
    assert.equal(passed.length, 70);
    for (const res of burst.filter((r) => r.statusCode !== 200)) assert429(res, window);
    for (const res of passed) {
      const remaining = Number(res.headers['x-ratelimit-remaining']);
      assert.ok(Number.isInteger(remaining) && remaining >= 0 && remaining < 70, `remaining ${remaining}`);
    }
    // and Redis holds every one of them, the refused ones too
    const redis = new Redis(REDIS_URL);
    t.after(() => redis.quit());
    assert.equal(await redis.get(`${prefix}:user:${alice.user.id}`), '120');
  });

  it('with Redis a new window starts from zero: nothing counted in the last one carries over', async (t) => {
    if (!(await redisAvailable())) return t.skip(`no Redis at ${REDIS_URL}`);
    const prefix = uniquePrefix();
    const app = await limitedApp(t, { redisUrl: REDIS_URL, rateLimitKeyPrefix: prefix, rateLimitAuthenticated: 3, rateLimitWindowSeconds: 2 });
    await redisCheckReads(app, 'ok');
    const alice = await createUser(app, { login: false });
    const me = () => app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: alice.auth });
    // over the limit within one window, however slow the machine (a window that ends midway starts the count again)
    let res = await me();
    for (let i = 0; i < 100 && res.statusCode !== 429; i++) res = await me();
    assert429(res, 2);
    // the window's counter expires in Redis: the next request is the first of a new window
    const redis = new Redis(REDIS_URL);
    t.after(() => redis.quit());
    await waitFor(async () => ((await redis.exists(`${prefix}:user:${alice.user.id}`)) === 0 ? true : undefined));
    res = await me();
    assert.equal(res.statusCode, 200, res.body);
    assertLimitHeaders(res, 3, 2, 2);
  });

  it('two instances sharing Redis: one bucket, every request counted in it, so the 101st is 429', async (t) => {
    if (!(await redisAvailable())) return t.skip(`no Redis at ${REDIS_URL}`);
    const prefix = uniquePrefix();
    // a window no busy machine outlasts: the 101 requests all fall in one
    const window = 3600;
    const a = await limitedApp(t, { redisUrl: REDIS_URL, rateLimitKeyPrefix: prefix, rateLimitWindowSeconds: window });
    // the same configuration and database, a second process's worth of everything else
    const b = await buildApp(a.ctx.config, { database: a.ctx.database });
    t.after(() => b.close());
    for (const app of [a, b]) await redisCheckReads(app, 'ok');
    const alice = await createUser(a, { login: false });
    // over real sockets, as a fleet serves: an instance hears back from Redis between requests
    const urls = { a: await listening(a), b: await listening(b) };
    for (let i = 1; i <= 100; i++) {
      const name = i % 2 === 0 ? 'a' : 'b';
      const res = await fetch(`${urls[name]}/api/v1/auth/me`, { headers: alice.auth });
      const body = await res.text();
      assert.equal(res.status, 200, `request ${i}: ${body}`);
      // each request is counted in Redis before it is answered: the count of both instances
      assert.equal(res.headers.get('x-ratelimit-remaining'), String(100 - i), `request ${i} on ${name}`);
    }
    assert429(await a.inject({ method: 'GET', url: '/api/v1/auth/me', headers: alice.auth }), window);
    assert429(await b.inject({ method: 'GET', url: '/api/v1/auth/me', headers: alice.auth }), window);
    for (const app of [a, b]) {
      const ready = await app.inject({ method: 'GET', url: '/ready' });
      assert.equal(ready.json<{ checks: Record<string, string> }>().checks.redis, 'ok');
    }
  });

  it('with Redis unreachable it keeps serving on per-process counters and /ready shows degraded', async (t) => {
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const logs = new LogCapture();
    const app = await limitedApp(t, { redisUrl: `redis://127.0.0.1:${port}`, rateLimitAnonymous: 5 }, logs);
    for (let i = 1; i <= 5; i++) {
      const res = await app.inject({ method: 'GET', url: '/api/v1/users' });
      assert.equal(res.statusCode, 401);
      assertLimitHeaders(res, 5, 5 - i);
    }
    assert429(await app.inject({ method: 'GET', url: '/api/v1/users' }));
    const ready = await app.inject({ method: 'GET', url: '/ready' });
    assert.equal(ready.statusCode, 200);
    assert.deepEqual(ready.json(), { status: 'degraded', checks: { database: 'ok', queue: 'ok', redis: 'degraded' } });
    const warnings = logs.parsed().filter((l) => /falling back to per-process counters/.test(String(l.msg)));
    assert.equal(warnings.length, 1, 'the fallback is logged once');
    assert.equal(warnings[0]!.level, 40);
  });

  it('a count Redis answered while the process was busy is not made per process as well', async (t) => {
    if (!(await redisAvailable())) return t.skip(`no Redis at ${REDIS_URL}`);
    const logs = new LogCapture();
    const app = await limitedApp(t, {}, logs);
    const counters = createCounterRedis(REDIS_URL, app.log);
    const { redis } = counters;
    t.after(() => redis.disconnect());
    await counters.connected;
    const prefix = uniquePrefix();
    const counter = redisOrMemory(counters, { points: 1, duration: 60, keyPrefix: prefix });
    const counted = counter.use((limiter) => limiter.penalty('k', 1));
    // a stall longer than a count waits for Redis, after the command is sent: its answer waits unread
    setImmediate(() => {
      const end = Date.now() + 1000;
      while (Date.now() < end);
    });
    assert.equal((await counted).consumedPoints, 1);
    assert.equal(await redis.get(`${prefix}:k`), '1');
    assert.ok(!logs.text.includes('falling back'), logs.text);
    redis.disconnect();
    assert.equal((await counter.use((limiter) => limiter.penalty('k', 1))).consumedPoints, 1, 'the per-process count starts at zero');
  });

  it('falls back when Redis goes away and returns to the shared counters when it is back', async (t) => {
    if (!(await redisAvailable())) return t.skip(`no Redis at ${REDIS_URL}`);
    const proxy = await redisProxy(t);

    const logs = new LogCapture();
    const prefix = uniquePrefix();
    const a = await limitedApp(t, { redisUrl: proxy.url, rateLimitKeyPrefix: prefix }, logs);
    const b = await limitedApp(t, { redisUrl: REDIS_URL, rateLimitKeyPrefix: prefix });
    for (const app of [a, b]) await redisCheckReads(app, 'ok');
    const me = await createUser(a, { login: false });
    const hit = (app: FastifyInstance) => app.inject({ method: 'GET', url: '/api/v1/users', headers: me.auth });

    let res = await hit(a);
    assert.equal(res.headers['x-ratelimit-remaining'], '99');
    res = await hit(b); // b's database does not know the user (401), but the bucket is the same
    assert.equal(res.headers['x-ratelimit-remaining'], '98');

    await proxy.cut();
    // until a's connection has noticed the cut
    await redisCheckReads(a, 'degraded');
    res = await hit(a);
    assert.equal(res.statusCode, 200, 'serving continues without Redis');
    assert.equal(res.headers['x-ratelimit-remaining'], '99', 'per-process counter');
    res = await hit(a);
    assert.equal(res.headers['x-ratelimit-remaining'], '98');
    const degraded = await a.inject({ method: 'GET', url: '/ready' });
    assert.equal(degraded.json<{ checks: Record<string, string> }>().checks.redis, 'degraded');
    // the sign-in throttle's counters share the connection: the same outage, no line of their own
    const wrong = await a.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username: me.email, password: 'not the password' } });
    assert.equal(wrong.statusCode, 401, wrong.body);

    await proxy.restore();
    await redisCheckReads(a, 'ok');
    res = await hit(a);
    assert.equal(res.headers['x-ratelimit-remaining'], '97', 'back on the shared Redis counter');

    // one line each way for the process, at warn and info; the failures between at debug only
    const lines = logs.parsed().filter((l) => /Redis/.test(String(l.msg)) && Number(l.level) > 20);
    assert.deepEqual(
      lines.map((l) => [l.level, l.msg]),
      [
        [40, 'rate limiting: Redis unavailable, falling back to per-process counters'],
        [30, 'rate limiting: Redis is back, counters are shared again'],
      ],
    );
  });
});
