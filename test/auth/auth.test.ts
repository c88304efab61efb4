import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, errorBody, TEST_PASSWORD, type TestUser } from '../helpers/app.ts';

describe('auth', () => {
  let app: FastifyInstance;
  let alice: TestUser;
  before(async () => {
    app = await buildTestApp(undefined);
    alice = await createUser(app);
  });
  after(() => app.close());

  it('logs in with JSON and returns a token pair', async () => {
    const res = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username: alice.email, password: TEST_PASSWORD } });
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['access_token', 'refresh_token', 'token_type']);
    assert.equal(body.token_type, 'bearer');
  });

  it('logs in with a form-encoded body (OAuth2 password flow)', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ grant_type: 'password', username: alice.email, password: TEST_PASSWORD, scope: '' }).toString(),
    });
    assert.equal(res.statusCode, 200, res.body);
  });

  it('e-mail is matched case-insensitively', async () => {
    const res = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username: alice.email.toUpperCase(), password: TEST_PASSWORD } });
    assert.equal(res.statusCode, 200);
  });

  it('wrong password and unknown e-mail give the same 401', async () => {
    const wrong = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username: alice.email, password: 'wrong-password' } });
    const unknown = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username: 'nobody@example.com', password: 'wrong-password' } });
    assert.equal(wrong.statusCode, 401);
    assert.equal(unknown.statusCode, 401);
    assert.deepEqual(errorBody(wrong), errorBody(unknown));
    assert.equal(errorBody(wrong).error_code, 'INVALID_CREDENTIALS');
  });

  it('login with a missing field is 422 with the error shape', async () => {
    const res = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username: alice.email } });
    assert.equal(res.statusCode, 422);
    const body = errorBody(res);
    assert.equal(body.error_code, 'VALIDATION_ERROR');
    assert.ok(Array.isArray(body.errors));
  });

  it('an inactive user cannot log in (403 Inactive user)', async () => {
    const bob = await createUser(app, { active: false });
    const res = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username: bob.email, password: TEST_PASSWORD } });
    assert.equal(res.statusCode, 403);
    assert.deepEqual(errorBody(res), { detail: 'Inactive user', error_code: 'INACTIVE_USER' });
  });

  it('GET /auth/me returns exactly the spec fields', async () => {
    const res = await api(app, alice, { method: 'GET', url: '/api/v1/auth/me' });
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['created_at', 'email', 'full_name', 'id', 'is_active', 'is_admin']);
    assert.equal(body.email, alice.email);
    assert.equal(body.is_admin, false);
    assert.ok(!Number.isNaN(Date.parse(body.created_at)));
  });

  it('GET /auth/me without a token is 401, with a bad token 401 "Could not validate credentials"', async () => {
    const none = await app.inject({ method: 'GET', url: '/api/v1/auth/me' });
    assert.equal(none.statusCode, 401);
    assert.equal(errorBody(none).error_code, 'NOT_AUTHENTICATED');
    const bad = await app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: 'Bearer abc.def.ghi' } });
    assert.equal(bad.statusCode, 401);
    assert.deepEqual(errorBody(bad), { detail: 'Could not validate credentials', error_code: 'INVALID_TOKEN' });
  });

  it('refresh returns a new access token only; the refresh token is not an access token', async () => {
    const res = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: alice.refreshToken } });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(Object.keys(res.json()).sort(), ['access_token', 'token_type']);
    const me = await app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Bearer ${res.json().access_token}` } });
    assert.equal(me.statusCode, 200);
    const asAccess = await app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Bearer ${alice.refreshToken}` } });
    assert.equal(asAccess.statusCode, 401);
    const accessAsRefresh = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: alice.token } });
    assert.equal(accessAsRefresh.statusCode, 401);
  });

  it('logout revokes the refresh token', async () => {
    const carol = await createUser(app);
    const out = await app.inject({ method: 'POST', url: '/api/v1/auth/logout', payload: { refresh_token: carol.refreshToken } });
    assert.equal(out.statusCode, 204);
    assert.equal(out.body, '');
    const again = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: carol.refreshToken } });
    assert.equal(again.statusCode, 401);
    assert.equal(errorBody(again).error_code, 'INVALID_TOKEN');
  });
});
