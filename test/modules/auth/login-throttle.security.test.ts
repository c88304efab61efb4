import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { Redis } from 'ioredis';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { loadConfig } from '../../../src/config.ts';
import { buildTestApp, createUser, errorBody, TEST_PASSWORD, twoApps, waitFor, type TestUser, REDIS_URL, redisAvailable, uniquePrefix } from '../../helpers/app.ts';
import { redisProxy } from '../../helpers/redis-proxy.ts';
import { login, requestRecovery } from './auth.helpers.ts';

const MAX = 10;
const CEILING = 30;
let ipCounter = 0;
/** A client address no other test of this file uses (each IP has its own anonymous bucket). */
const freshIp = () => `198.51.${Math.floor(++ipCounter / 250)}.${(ipCounter % 250) + 1}`;

function assertThrottled(res: LightMyRequestResponse, window: number): void {
  assert.equal(res.statusCode, 429, res.body);
  const body = errorBody(res);
  assert.equal(body.error_code, 'LOGIN_THROTTLED');
  assert.match(body.detail, /^Too many failed sign-in attempts for this e-mail address; retry in \d+ seconds$/);
  const retryAfter = Number(res.headers['retry-after']);
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= window, `Retry-After ${res.headers['retry-after']}`);
  assert.ok(body.detail.includes(`retry in ${retryAfter} seconds`));
}

/** `count` wrong passwords for `email` from client `ip`: every one a plain 401. */
async function fail(app: FastifyInstance, email: string, count: number, ip = freshIp(), extra: Partial<InjectOptions> = {}): Promise<string> {
  for (let i = 0; i < count; i++) {
    const res = await login(app, email, `wrong-password-${i}`, { remoteAddress: ip, ...extra });
    assert.equal(res.statusCode, 401, `failure ${i + 1}: ${res.body}`);
    assert.equal(errorBody(res).error_code, 'INVALID_CREDENTIALS');
  }
  return ip;
}

describe('login protection per account', () => {
  let app: FastifyInstance;
  let bystander: TestUser;
  before(async () => {
    app = await buildTestApp(undefined, {
      loginThrottleMaxFailures: MAX,
      loginThrottleWindowSeconds: 900,
      loginThrottleMaxFailuresPerEmail: CEILING,
      rateLimitAnonymous: 20,
      rateLimitKeyPrefix: uniquePrefix(),
    });
    bystander = await createUser(app);
  });

  it('after 10 failures from one client, its further sign-ins for the e-mail are 429 — a foreign bearer token, the right password', async () => {
    const victim = await createUser(app);
    const attacker = await fail(app, victim.email, MAX);
    assertThrottled(await login(app, victim.email, 'wrong-password-11', { remoteAddress: attacker }), 900);
    // another account's valid token in the Authorization header buys nothing
    assertThrottled(await login(app, victim.email, 'wrong-password-12', { remoteAddress: attacker, headers: bystander.auth }), 900);
    assertThrottled(await login(app, victim.email, TEST_PASSWORD, { remoteAddress: attacker }), 900);
    assertThrottled(await login(app, victim.email.toUpperCase(), TEST_PASSWORD, { remoteAddress: attacker }), 900);
    // other accounts are not affected
    assert.equal((await login(app, bystander.email, TEST_PASSWORD, { remoteAddress: attacker })).statusCode, 200);
  });

  it('finding 3: failures from one client do not lock the holder out of another', async () => {
    const victim = await createUser(app);
    const attacker = await fail(app, victim.email, MAX);
    assertThrottled(await login(app, victim.email, 'wrong', { remoteAddress: attacker }), 900);
    assert.equal((await login(app, victim.email, TEST_PASSWORD, { remoteAddress: freshIp() })).statusCode, 200, 'the holder signs in from their own client');
  });

  it('a per-e-mail ceiling across all clients stays: failures spread over many clients reach it, then every client is 429', async () => {
    const victim = await createUser(app);
    // 5 failures from each client: none reaches its own limit of 10
    for (let i = 0; i < CEILING / 5; i++) await fail(app, victim.email, 5);
    assertThrottled(await login(app, victim.email, TEST_PASSWORD, { remoteAddress: freshIp() }), 900);
  });

  it('an unknown e-mail is counted and answered exactly like a known one', async () => {
    const known = await createUser(app);
    const unknown = `nobody-${crypto.randomBytes(4).toString('hex')}@example.com`;
    const [ipK, ipU] = [freshIp(), freshIp()];
    const before = [await login(app, known.email, 'wrong', { remoteAddress: ipK }), await login(app, unknown, 'wrong', { remoteAddress: ipU })];
    assert.deepEqual(errorBody(before[1]), errorBody(before[0]));
    await fail(app, known.email, MAX - 1, ipK);
    await fail(app, unknown, MAX - 1, ipU);
    const [k, u] = [await login(app, known.email, 'wrong', { remoteAddress: ipK }), await login(app, unknown, 'wrong', { remoteAddress: ipU })];
    assertThrottled(k, 900);
    assertThrottled(u, 900);
    const shape = (r: LightMyRequestResponse) => ({ status: r.statusCode, body: r.body.replace(/\d+/g, 'N'), headers: Object.keys(r.headers).sort() });
    assert.deepEqual(shape(u), shape(k));
  });

  it('a successful sign-in clears the count', async () => {
    const user = await createUser(app);
    const ip = await fail(app, user.email, MAX - 1);
    assert.equal((await login(app, user.email, TEST_PASSWORD, { remoteAddress: ip })).statusCode, 200);
    // without the clearing, the first of these would have been the 11th attempt (429)
    await fail(app, user.email, MAX - 1, ip);
  });

  it("a password reset clears the e-mail's throttle: the resetting client's count and the ceiling", async () => {
    const user = await createUser(app);
    for (let i = 0; i < CEILING / MAX - 1; i++) await fail(app, user.email, MAX);
    const ip = await fail(app, user.email, MAX);
    assertThrottled(await login(app, user.email, TEST_PASSWORD, { remoteAddress: freshIp() }), 900);
    // a token as the recovery e-mail would carry it
    const token = crypto.randomBytes(32).toString('base64url');
    await app.ctx.db
      .insertInto('password_reset_tokens')
      .values({ user_id: user.user.id, token_hash: crypto.createHash('sha256').update(token).digest('hex'), email: user.email, expires_at: new Date(Date.now() + 60000) })
      .execute();
    const reset = await app.inject({ method: 'POST', url: '/api/v1/auth/reset-password', payload: { token, new_password: 'a-password-after-the-lock' }, remoteAddress: ip });
    assert.equal(reset.statusCode, 200, reset.body);
    assert.equal((await login(app, user.email, 'a-password-after-the-lock', { remoteAddress: ip })).statusCode, 200);
    assert.equal((await login(app, user.email, 'a-password-after-the-lock', { remoteAddress: freshIp() })).statusCode, 200);
  });

  it('login, refresh and both recovery routes count against the client IP whatever token they carry', async () => {
    const holder = await createUser(app);
    const calls: [string, (ip: string) => Promise<LightMyRequestResponse>][] = [
      ['login', (ip) => login(app, bystander.email, 'wrong-password', { remoteAddress: ip, headers: holder.auth })],
      ['refresh', (ip) => app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: 'x' }, remoteAddress: ip, headers: holder.auth })],
      ['logout', (ip) => app.inject({ method: 'POST', url: '/api/v1/auth/logout', payload: { refresh_token: 'x' }, remoteAddress: ip, headers: holder.auth })],
      ['password-recovery', (ip) => requestRecovery(app, `nobody-${ip}@example.com`, { remoteAddress: ip, headers: holder.auth })],
      ['reset-password', (ip) => app.inject({ method: 'POST', url: '/api/v1/auth/reset-password', payload: { token: 'x', new_password: 'long-enough-1' }, remoteAddress: ip, headers: holder.auth })],
    ];
    for (const [name, call] of calls) {
      const ip = freshIp();
      for (let i = 1; i <= 20; i++) {
        const res = await call(ip);
        assert.equal(res.headers['x-ratelimit-limit'], '20', `${name} ${i}: the anonymous bucket`);
        assert.equal(res.headers['x-ratelimit-remaining'], String(20 - i), `${name} ${i}`);
      }
      const limited = await call(ip);
      assert.equal(limited.statusCode, 429, name);
      assert.equal(errorBody(limited).error_code, 'RATE_LIMITED');
      // the same token on a route that needs it still counts against its user
      const mine = await app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: holder.auth, remoteAddress: ip });
      assert.equal(mine.statusCode, 200);
      assert.equal(mine.headers['x-ratelimit-limit'], String(app.ctx.config.rateLimitAuthenticated));
    }
  });

  it('LOGIN_THROTTLE_MAX_FAILURES and LOGIN_THROTTLE_WINDOW_SECONDS: 10 within 15 minutes by default, validated', () => {
    const defaults = loadConfig({});
    assert.equal(defaults.loginThrottleMaxFailures, 10);
    assert.equal(defaults.loginThrottleWindowSeconds, 900);
    const set = loadConfig({ LOGIN_THROTTLE_MAX_FAILURES: '5', LOGIN_THROTTLE_WINDOW_SECONDS: '60' });
    assert.equal(set.loginThrottleMaxFailures, 5);
    assert.equal(set.loginThrottleWindowSeconds, 60);
    assert.throws(() => loadConfig({ LOGIN_THROTTLE_MAX_FAILURES: '0' }), /LOGIN_THROTTLE_MAX_FAILURES must be between 1 and/);
    assert.throws(() => loadConfig({ LOGIN_THROTTLE_WINDOW_SECONDS: 'x' }), /LOGIN_THROTTLE_WINDOW_SECONDS must be an integer/);
    assert.equal(defaults.loginThrottleMaxFailuresPerEmail, undefined, 'unset: 10 times LOGIN_THROTTLE_MAX_FAILURES');
    assert.equal(loadConfig({ LOGIN_THROTTLE_MAX_FAILURES_PER_EMAIL: '50' }).loginThrottleMaxFailuresPerEmail, 50);
    assert.throws(() => loadConfig({ LOGIN_THROTTLE_MAX_FAILURES_PER_EMAIL: '0' }), /LOGIN_THROTTLE_MAX_FAILURES_PER_EMAIL must be between 1 and/);
  });
  it('a device is throttled on its own: 10 failures with it refuse it (429); its failures neither count towards the ceiling nor refuse other clients', async () => {
    const user = await createUser(app);
    const signIn = await app.inject({ method: 'POST', url: '/api/v2/auth/login', payload: { username: user.email, password: TEST_PASSWORD }, remoteAddress: freshIp() });
    const headers = { 'x-device-token': signIn.json().device_token as string };
    const ip = freshIp();
    await fail(app, user.email, MAX, ip, { headers });
    assertThrottled(await login(app, user.email, TEST_PASSWORD, { remoteAddress: freshIp(), headers }), 900);
    // 27 more failures without it: under the ceiling of 30 only if the device's 10 were not counted
    for (let i = 0; i < 3; i++) await fail(app, user.email, 9);
    assert.equal((await login(app, user.email, TEST_PASSWORD, { remoteAddress: ip })).statusCode, 200, 'the client the device failed from, without it');
  });
});

/** The `device` cookie a sign-in set: its value and attributes. */
function deviceCookie(res: LightMyRequestResponse): { value: string; attributes: string[] } {
  const header = res.headers['set-cookie'];
  const line = (Array.isArray(header) ? header : [header]).find((c) => typeof c === 'string' && c.startsWith('device='));
  assert.ok(line, `a device cookie in ${JSON.stringify(header)}`);
  const [pair, ...attributes] = line.split(';').map((p) => p.trim());
  return { value: pair.slice('device='.length), attributes };
}

describe('device tokens: throttle, do not lock (OWASP slow brute force)', () => {
  let app: FastifyInstance;
  before(async () => {
    // the default ceiling: 10 × LOGIN_THROTTLE_MAX_FAILURES across all clients
    app = await buildTestApp(undefined, { loginThrottleMaxFailures: MAX, loginThrottleWindowSeconds: 900, rateLimitAnonymous: 20, rateLimitKeyPrefix: uniquePrefix() });
  });
  const v2login = (email: string, password: string, extra: Partial<InjectOptions> = {}) =>
    app.inject({ method: 'POST', url: '/api/v2/auth/login', payload: { username: email, password }, ...extra } as InjectOptions) as Promise<LightMyRequestResponse>;
  /** 110 wrong sign-ins for `email` from 11 client addresses, 10 each (the attack); the last ones meet the ceiling. */
  const flood = async (email: string): Promise<string[]> => {
    const answers: number[] = [];
    const clients = Array.from({ length: 11 }, () => freshIp());
    for (const ip of clients) {
      for (let i = 0; i < MAX; i++) answers.push((await login(app, email, `wrong-${ip}-${i}`, { remoteAddress: ip })).statusCode);
    }
    assert.deepEqual(answers.slice(0, 100), Array(100).fill(401));
    assert.deepEqual(answers.slice(100), Array(10).fill(429), 'the ceiling of 100 is reached');
    return clients;
  };

  it('a sign-in answers a device token: the cookie (HttpOnly, SameSite=Strict, Path=/api, no Secure over plain HTTP), v2 also in the body, v1 keeps the specification body', async () => {
    const user = await createUser(app);
    const tokensOf = () => app.ctx.db.selectFrom('device_tokens').select(['token_hash', 'expires_at']).where('user_id', '=', user.user.id).execute();
    const before = (await tokensOf()).length;
    const v2 = await v2login(user.email, TEST_PASSWORD, { remoteAddress: freshIp() });
    assert.equal(v2.statusCode, 200, v2.body);
    const cookie = deviceCookie(v2);
    assert.deepEqual(Object.keys(v2.json()).sort(), ['access_token', 'device_token', 'refresh_token', 'token_type']);
    assert.equal(v2.json().device_token, cookie.value);
    assert.match(cookie.value, /^[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(cookie.attributes.filter((a) => !a.startsWith('Max-Age=')).sort(), ['HttpOnly', 'Path=/api', 'SameSite=Strict']);
    assert.equal(cookie.attributes.find((a) => a.startsWith('Max-Age=')), `Max-Age=${30 * 86400}`);
    const v1 = await login(app, user.email, TEST_PASSWORD, { remoteAddress: freshIp() });
    assert.deepEqual(Object.keys(v1.json()).sort(), ['access_token', 'refresh_token', 'token_type'], 'v1: the specification body');
    deviceCookie(v1);
    // stored as its SHA-256 only
    const rows = await tokensOf();
    assert.equal(rows.length, before + 2, 'one per client that signed in without one');
    assert.ok(rows.some((r) => r.token_hash === crypto.createHash('sha256').update(cookie.value).digest('hex')));
    assert.ok(rows.every((r) => !Object.values(r).includes(cookie.value)));
    // signing in again with it renews it rather than adding another
    const again = await v2login(user.email, TEST_PASSWORD, { remoteAddress: freshIp(), headers: { cookie: `theme=dark; device=${cookie.value}` } });
    assert.equal(again.json().device_token, cookie.value);
    assert.equal((await tokensOf()).length, before + 2);
  });

  it("finding 2: 110 failures from 11 clients lock a fresh client out, but the holder's device token (cookie or header) still signs in", async () => {
    const victim = await createUser(app);
    const token = (await v2login(victim.email, TEST_PASSWORD, { remoteAddress: freshIp() })).json().device_token as string;
    const [attacker] = await flood(victim.email);
    assertThrottled(await login(app, victim.email, TEST_PASSWORD, { remoteAddress: freshIp() }), 900);
    for (const headers of [{ cookie: `device=${token}` }, { 'x-device-token': token }]) {
      const res = await login(app, victim.email, TEST_PASSWORD, { remoteAddress: freshIp(), headers });
      assert.equal(res.statusCode, 200, `${JSON.stringify(Object.keys(headers))}: ${res.body}`);
    }
    // v2 and the form flow too; the client's address does not matter, even one the attacker used
    assert.equal((await v2login(victim.email, TEST_PASSWORD, { remoteAddress: attacker, headers: { 'x-device-token': token } })).statusCode, 200);
    // the holder's success does not lift the ceiling for clients without a device token
    assertThrottled(await login(app, victim.email, TEST_PASSWORD, { remoteAddress: freshIp() }), 900);
  });

  it("a device token does not help another account, an expired or made-up one is no device token, and sign-out everywhere ends them", async () => {
    const victim = await createUser(app);
    const other = await createUser(app);
    const otherToken = (await v2login(other.email, TEST_PASSWORD, { remoteAddress: freshIp() })).json().device_token as string;
    const mine = (await v2login(victim.email, TEST_PASSWORD, { remoteAddress: freshIp() })).json();
    await flood(victim.email);
    for (const token of [otherToken, crypto.randomBytes(32).toString('base64url'), 'not a token', '']) {
      assertThrottled(await login(app, victim.email, TEST_PASSWORD, { remoteAddress: freshIp(), headers: { 'x-device-token': token } }), 900);
    }
    assert.equal((await login(app, victim.email, TEST_PASSWORD, { remoteAddress: freshIp(), headers: { 'x-device-token': mine.device_token } })).statusCode, 200);
    const hash = crypto.createHash('sha256').update(mine.device_token).digest('hex');
    await app.ctx.db.updateTable('device_tokens').set({ expires_at: new Date(Date.now() - 1000) }).where('token_hash', '=', hash).execute();
    assertThrottled(await login(app, victim.email, TEST_PASSWORD, { remoteAddress: freshIp(), headers: { 'x-device-token': mine.device_token } }), 900);

    const fresh = (await v2login(other.email, TEST_PASSWORD, { remoteAddress: freshIp() })).json();
    assert.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/logout-all', headers: { authorization: `Bearer ${fresh.access_token}` } })).statusCode, 204);
    assert.deepEqual(await app.ctx.db.selectFrom('device_tokens').select('id').where('user_id', '=', other.user.id).execute(), []);
  });

});

describe('login protection behind a proxy (TRUST_PROXY)', () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestApp(undefined, { trustProxy: true, loginThrottleMaxFailures: MAX, rateLimitKeyPrefix: uniquePrefix() });
  });

  it('the client is the forwarded address: failures forwarded for one address do not throttle another behind the same proxy', async () => {
    const victim = await createUser(app);
    const proxy = freshIp();
    const forwardedFor = (ip: string) => ({ remoteAddress: proxy, headers: { 'x-forwarded-for': ip } });
    const attacker = freshIp();
    await fail(app, victim.email, MAX, proxy, forwardedFor(attacker));
    assertThrottled(await login(app, victim.email, TEST_PASSWORD, forwardedFor(attacker)), 900);
    assert.equal((await login(app, victim.email, TEST_PASSWORD, forwardedFor(freshIp()))).statusCode, 200);
  });

  it('the device cookie is Secure when the trusted proxy forwarded a TLS request (X-Forwarded-Proto: https)', async () => {
    const user = await createUser(app);
    const tls = await login(app, user.email, TEST_PASSWORD, { remoteAddress: freshIp(), headers: { 'x-forwarded-proto': 'https' } });
    assert.equal(tls.statusCode, 200);
    assert.ok(deviceCookie(tls).attributes.includes('Secure'));
    const plain = await login(app, user.email, TEST_PASSWORD, { remoteAddress: freshIp(), headers: { 'x-forwarded-proto': 'http' } });
    assert.ok(!deviceCookie(plain).attributes.includes('Secure'));
  });
});

describe('login protection per account, shared through Redis by two instances', () => {
  // an hour, so that ten sign-ins on a busy machine cannot outlast it; the test ends it early in Redis
  const WINDOW = 3600;
  const prefix = uniquePrefix();
  let a: FastifyInstance;
  let b: FastifyInstance;
  let available = false;
  before(async () => {
    available = await redisAvailable();
    if (!available) return;
    [a, b] = await twoApps(undefined, {
      redisUrl: process.env.TEST_REDIS_URL || REDIS_URL,
      rateLimitKeyPrefix: prefix,
      loginThrottleMaxFailures: MAX,
      loginThrottleWindowSeconds: WINDOW,
    });
  });

  it('failures on either instance add up; both refuse the 11th; after the window both let the right password in', async (t) => {
    if (!available) return t.skip(`no Redis at ${REDIS_URL}`);
    const user = await createUser(a);
    const ip = freshIp();
    for (let i = 0; i < MAX; i++) {
      const res = await login(i % 2 === 0 ? a : b, user.email, `wrong-${i}`, { remoteAddress: ip });
      assert.equal(res.statusCode, 401, `failure ${i + 1}`);
    }
    assertThrottled(await login(a, user.email, TEST_PASSWORD, { remoteAddress: ip }), WINDOW);
    assertThrottled(await login(b, user.email, TEST_PASSWORD, { remoteAddress: ip, headers: { authorization: 'Bearer forged.token.value' } }), WINDOW);
    // the one per-client counter (e-mail and address) in Redis ends with the window that began at the first failure
    const redis = new Redis(REDIS_URL);
    t.after(() => redis.quit());
    const keys = await redis.keys(`${prefix}:login:*`);
    assert.equal(keys.length, 1, keys.join(', '));
    const ttl = await redis.pttl(keys[0]!);
    assert.ok(ttl > 0 && ttl <= WINDOW * 1000, `TTL ${ttl} ms`);
    // the window ends now rather than in an hour
    await redis.pexpire(keys[0]!, 1);
    const ok = await waitFor(async () => {
      const res = await login(b, user.email, TEST_PASSWORD, { remoteAddress: ip });
      return res.statusCode === 200 ? res : undefined;
    });
    assert.equal(ok.statusCode, 200);
    // the success on b cleared the count a sees
    await fail(a, user.email, MAX - 1, ip);
    assert.equal((await login(a, user.email, TEST_PASSWORD, { remoteAddress: ip })).statusCode, 200);
  });

  it('a slow Redis is waited for: an attempt it answers late is judged on the shared count, not on this process\'s', async (t) => {
    if (!available) return t.skip(`no Redis at ${REDIS_URL}`);
    const proxy = await redisProxy(t);
    const slow = await buildTestApp(t, { redisUrl: proxy.url, rateLimitKeyPrefix: prefix, loginThrottleMaxFailures: MAX, loginThrottleWindowSeconds: WINDOW });
    const user = await createUser(slow);
    // the failures on the other instance, its Redis answering at once (it does not know the e-mail: counted alike)
    const ip = await fail(b, user.email, MAX);
    // three times the wait of the request limit (ANSWER_MS, 500 ms), within the connection's command timeout
    proxy.delayMs = 1500;
    assertThrottled(await login(slow, user.email, TEST_PASSWORD, { remoteAddress: ip }), WINDOW);
  });
});
