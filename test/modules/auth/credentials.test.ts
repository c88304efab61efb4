import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { SignJWT } from 'jose';
import { loadConfig } from '../../../src/config.ts';
import { api, errorBody, type TestUser, buildTestApp, createUser, snapshot } from '../../helpers/app.ts';

const SECRET = 'accounts-attack-suite-secret-0123456789ab';

async function refresh(app: FastifyInstance, token: string) {
  return app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: token } });
}

async function login(app: FastifyInstance, username: string, password: string) {
  return app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username, password } });
}

describe('forged refresh tokens', () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestApp(undefined, { jwtSecret: SECRET });
  });
  after(() => app.close());

  it('a refresh token past its lifetime is 401 (an expired JWT whose row is live, or an expired row)', async () => {
    const u = await createUser(app, { login: false });
    const row = await app.ctx.db.selectFrom('refresh_tokens').select('jti').where('user_id', '=', u.user.id).executeTakeFirstOrThrow();
    const t = Math.floor(Date.now() / 1000);
    const expiredJwt = await new SignJWT({ typ: 'refresh' })
      .setProtectedHeader({ alg: 'HS256', typ: 'rt+jwt' })
      .setSubject(String(u.user.id))
      .setIssuer(app.ctx.config.jwtIssuer)
      .setAudience(app.ctx.config.jwtAudience)
      .setIssuedAt(t - app.ctx.config.refreshTokenTtlSeconds - 10)
      .setExpirationTime(t - 10)
      .setJti(row.jti)
      .sign(new TextEncoder().encode(SECRET));
    assert.equal((await refresh(app, expiredJwt)).statusCode, 401);
    // the JWT still valid, but its row past expires_at
    await app.ctx.db.updateTable('refresh_tokens').set({ expires_at: new Date(Date.now() - 1000) }).where('jti', '=', row.jti).execute();
    assert.equal((await refresh(app, u.refreshToken)).statusCode, 401);
  });

  it("a refresh token naming another user's token id is 401", async () => {
    const victim = await createUser(app, { login: false });
    const attacker = await createUser(app, { login: false });
    const row = await app.ctx.db.selectFrom('refresh_tokens').select('jti').where('user_id', '=', victim.user.id).executeTakeFirstOrThrow();
    const t = Math.floor(Date.now() / 1000);
    const forged = await new SignJWT({ typ: 'refresh' })
      .setProtectedHeader({ alg: 'HS256', typ: 'rt+jwt' })
      .setSubject(String(attacker.user.id))
      .setIssuer(app.ctx.config.jwtIssuer)
      .setAudience(app.ctx.config.jwtAudience)
      .setIssuedAt(t)
      .setExpirationTime(t + 600)
      .setJti(row.jti)
      .sign(new TextEncoder().encode(SECRET));
    const before = await snapshot(app);
    assert.equal((await refresh(app, forged)).statusCode, 401);
    assert.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/logout', payload: { refresh_token: forged } })).statusCode, 401);
    assert.equal(await snapshot(app), before, "the victim's token is not revoked");
  });
});

describe('passwords', () => {
  let app: FastifyInstance;
  let admin: TestUser;
  before(async () => {
    app = await buildTestApp(undefined);
    admin = await createUser(app, { login: false, admin: true });
  });
  after(() => app.close());

  const create = (password: string) =>
    api(app, admin, {
      method: 'POST',
      url: '/api/v1/users',
      payload: { email: `pw-${crypto.randomBytes(4).toString('hex')}@example.com`, full_name: 'Password Test', password },
    });

  it('trailing and leading spaces are kept exactly', async () => {
    const pw = '  spaced password  ';
    const res = await create(pw);
    assert.equal(res.statusCode, 201);
    const email = res.json<{ email: string }>().email;
    assert.equal((await login(app, email, pw)).statusCode, 200);
    for (const variant of [pw.trim(), pw.trimEnd(), pw.trimStart(), `${pw} `]) {
      assert.equal((await login(app, email, variant)).statusCode, 401, JSON.stringify(variant));
    }
  });

  it('two passwords sharing their first 72 bytes are never interchangeable (longer ones are refused)', async () => {
    const base = 'x'.repeat(72);
    const res = await create(base);
    assert.equal(res.statusCode, 201);
    const email = res.json<{ email: string }>().email;
    // bcrypt alone would accept these: it only reads 72 bytes
    for (const longer of [`${base}A`, `${base}different-tail`]) {
      const attempt = await login(app, email, longer);
      assert.equal(attempt.statusCode, 401);
      assert.equal(errorBody(attempt).error_code, 'INVALID_CREDENTIALS');
    }
    assert.equal((await create(`${base}A`)).statusCode, 422);
  });

  it('with the default configuration the stored bcrypt cost is at least 10', async (t) => {
    const defaults = loadConfig({});
    assert.ok(defaults.bcryptRounds >= 10);
    const strong = await buildTestApp(t, { bcryptRounds: defaults.bcryptRounds });
    const boss = await createUser(strong, { login: false, admin: true });
    const res = await api(strong, boss, {
      method: 'POST',
      url: '/api/v1/users',
      payload: { email: 'cost@example.com', full_name: 'Cost', password: 'cost-check-password' },
    });
    assert.equal(res.statusCode, 201, res.body);
    const row = await strong.ctx.db.selectFrom('users').select('password_hash').where('email', '=', 'cost@example.com').executeTakeFirstOrThrow();
    const m = /^\$2[aby]\$(\d{2})\$[./A-Za-z0-9]{53}$/.exec(row.password_hash ?? '');
    assert.ok(m, `a bcrypt hash: ${row.password_hash?.slice(0, 7)}`);
    assert.ok(Number(m[1]) >= 10, `cost ${m[1]}`);
    assert.equal(Number(m[1]), defaults.bcryptRounds);
  });
});

describe('stale privilege', () => {
  it('a demoted admin reusing an unexpired token gets 403 on admin routes; nothing is created', async (t) => {
    const app = await buildTestApp(t);
    const admin = await createUser(app, { login: false, admin: true });
    const victim = await createUser(app, { login: false });
    await app.ctx.db.updateTable('users').set({ is_admin: false }).where('id', '=', admin.user.id).execute();
    await app.ctx.userCache.settle(); // the change reaches the user cache through its NOTIFY
    const before = await snapshot(app);
    const created = await api(app, admin, {
      method: 'POST',
      url: '/api/v1/users',
      payload: { email: 'stale@example.com', full_name: 'Stale', password: 'stale-password' },
    });
    assert.equal(created.statusCode, 403);
    assert.deepEqual(errorBody(created), { detail: 'Only administrators can create users', error_code: 'ADMIN_REQUIRED' });
    const deleted = await api(app, admin, { method: 'DELETE', url: `/api/v1/users/${victim.user.id}` });
    assert.equal(deleted.statusCode, 403);
    const promoted = await api(app, admin, { method: 'PATCH', url: `/api/v1/users/${victim.user.id}`, payload: { is_admin: true } });
    assert.equal(promoted.statusCode, 403);
    assert.equal(await snapshot(app), before);
    // deactivated and deleted through the database: 403 and 401 with the same token
    await app.ctx.db.updateTable('users').set({ is_active: false }).where('id', '=', admin.user.id).execute();
    await app.ctx.userCache.settle(); // the change reaches the user cache through its NOTIFY
    assert.equal((await api(app, admin, { method: 'GET', url: '/api/v1/users' })).statusCode, 403);
    await app.ctx.db.updateTable('users').set({ deleted_at: new Date() }).where('id', '=', admin.user.id).execute();
    await app.ctx.userCache.settle(); // the change reaches the user cache through its NOTIFY
    assert.equal((await api(app, admin, { method: 'GET', url: '/api/v1/users' })).statusCode, 401);
  });
});
