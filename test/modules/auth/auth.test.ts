import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { decodeJwt } from 'jose';
import { api, buildTestApp, createUser, errorBody, TEST_PASSWORD, type TestUser } from '../../helpers/app.ts';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const CREDENTIALS = { detail: 'Could not validate credentials', error_code: 'INVALID_TOKEN' };
const BAD_LOGIN = { detail: 'Incorrect email or password', error_code: 'INVALID_CREDENTIALS' };

function login(app: FastifyInstance, username: string, password: string) {
  return app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username, password } });
}

function refresh(app: FastifyInstance, refreshToken: unknown) {
  return app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: refreshToken } });
}

function me(app: FastifyInstance, token: string) {
  return app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Bearer ${token}` } });
}

async function refreshRows(app: FastifyInstance, userId: number) {
  return app.ctx.db.selectFrom('refresh_tokens').selectAll().where('user_id', '=', userId).orderBy('created_at').execute();
}

describe('auth', () => {
  let app: FastifyInstance;
  let alice: TestUser;
  before(async () => {
    app = await buildTestApp(undefined);
    alice = await createUser(app);
  });
  after(() => app.close());

  describe('POST /auth/login', () => {
    it('returns exactly access_token, refresh_token, token_type and stores the refresh token', async () => {
      const before = await refreshRows(app, alice.user.id);
      const res = await login(app, alice.email, TEST_PASSWORD);
      assert.equal(res.statusCode, 200);
      const body = res.json();
      assert.deepEqual(Object.keys(body).sort(), ['access_token', 'refresh_token', 'token_type']);
      assert.equal(body.token_type, 'bearer');
      const access = decodeJwt(body.access_token);
      const refreshClaims = decodeJwt(body.refresh_token);
      assert.equal(access.sub, String(alice.user.id));
      assert.equal(access.typ, 'access');
      assert.equal(refreshClaims.typ, 'refresh');
      assert.equal(access.exp! - access.iat!, 30 * 60, 'access token lives 30 minutes');
      assert.equal(refreshClaims.exp! - refreshClaims.iat!, 7 * 24 * 3600, 'refresh token lives 7 days');
      const after = await refreshRows(app, alice.user.id);
      assert.equal(after.length, before.length + 1);
      const row = after.find((r) => r.jti === refreshClaims.jti);
      assert.ok(row, 'the refresh token is stored by its jti');
      assert.equal(row.revoked_at, null);
      assert.equal(Math.round(row.expires_at.getTime() / 1000), refreshClaims.exp);
    });

    it('accepts a form-encoded body (OAuth2 password flow)', async () => {
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/auth/login',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ grant_type: 'password', username: alice.email, password: TEST_PASSWORD, scope: '' }).toString(),
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().token_type, 'bearer');
    });

    it('a form-encoded wrong password is the same 401', async () => {
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/auth/login',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ username: alice.email, password: 'nope-nope' }).toString(),
      });
      assert.equal(res.statusCode, 401);
      assert.deepEqual(errorBody(res), BAD_LOGIN);
    });

    it('matches the e-mail case-insensitively', async () => {
      const res = await login(app, alice.email.toUpperCase(), TEST_PASSWORD);
      assert.equal(res.statusCode, 200);
    });

    it('wrong password, unknown e-mail, an over-long password and empty strings give the same 401', async () => {
      const wrong = await login(app, alice.email, 'wrong-password');
      const unknown = await login(app, 'nobody@example.com', 'wrong-password');
      const tooLong = await login(app, alice.email, 'x'.repeat(100));
      // an empty string is well-formed JSON text: a wrong credential, not a format error
      const emptyPassword = await login(app, alice.email, '');
      const emptyUsername = await login(app, '', TEST_PASSWORD);
      for (const res of [wrong, unknown, tooLong, emptyPassword, emptyUsername]) {
        assert.equal(res.statusCode, 401);
        assert.deepEqual(errorBody(res), BAD_LOGIN);
        assert.equal(res.headers['www-authenticate'], 'Bearer');
      }
    });

    it('a deleted user cannot log in (401, same body as a wrong password)', async () => {
      const gone = await createUser(app);
      await app.ctx.db.updateTable('users').set({ deleted_at: new Date(), is_active: false }).where('id', '=', gone.user.id).execute();
      await app.ctx.userCache.settle(); // the change reaches the user cache through its NOTIFY
      const res = await login(app, gone.email, TEST_PASSWORD);
      assert.equal(res.statusCode, 401);
      assert.deepEqual(errorBody(res), BAD_LOGIN);
    });

    it('an inactive user with the right password gets 403 Inactive user; with a wrong one 401', async () => {
      const bob = await createUser(app, { active: false });
      const res = await login(app, bob.email, TEST_PASSWORD);
      assert.equal(res.statusCode, 403);
      assert.deepEqual(errorBody(res), { detail: 'Inactive user', error_code: 'INACTIVE_USER' });
      const wrong = await login(app, bob.email, 'wrong-password');
      assert.equal(wrong.statusCode, 401);
      assert.deepEqual(errorBody(wrong), BAD_LOGIN);
    });

    it('a missing field, a wrong type or an unknown property is 422 VALIDATION_ERROR with errors[]', async () => {
      const cases: [unknown, string[]][] = [
        [{ username: alice.email }, ['body', 'password']],
        [{ password: TEST_PASSWORD }, ['body', 'username']],
        [{ username: alice.email, password: 12345678 }, ['body', 'password']],
        [{ username: alice.email, password: TEST_PASSWORD, admin: true }, ['body', 'admin']],
      ];
      for (const [payload, loc] of cases) {
        const res = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: payload as object });
        assert.equal(res.statusCode, 422, JSON.stringify(payload));
        const body = errorBody(res);
        assert.equal(body.error_code, 'VALIDATION_ERROR');
        assert.ok(Array.isArray(body.errors) && body.errors.length > 0);
        assert.deepEqual((body.errors[0] as { loc: unknown }).loc, loc);
      }
    });

    it('malformed JSON is 422, an oversized body 413, an unsupported content type 415', async () => {
      const malformed = await app.inject({
        method: 'POST',
        url: '/api/v1/auth/login',
        headers: { 'content-type': 'application/json' },
        payload: '{"username": "a@example.com",',
      });
      assert.equal(malformed.statusCode, 422);
      assert.equal(errorBody(malformed).error_code, 'VALIDATION_ERROR');

      const huge = await app.inject({
        method: 'POST',
        url: '/api/v1/auth/login',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ username: alice.email, password: 'x'.repeat(2 * 1024 * 1024) }),
      });
      assert.equal(huge.statusCode, 413);
      assert.deepEqual(errorBody(huge), { detail: 'Request body is too large', error_code: 'PAYLOAD_TOO_LARGE' });

      const xml = await app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: { 'content-type': 'application/xml' }, payload: '<a/>' });
      assert.equal(xml.statusCode, 415);
      assert.equal(errorBody(xml).error_code, 'UNSUPPORTED_MEDIA_TYPE');
      // text/plain is parsed as a string, which is not the object the schema wants
      const text = await app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: { 'content-type': 'text/plain' }, payload: 'hi' });
      assert.equal(text.statusCode, 422);
      assert.equal(errorBody(text).error_code, 'VALIDATION_ERROR');
    });
  });

  describe('POST /auth/refresh', () => {
    it('returns exactly access_token and token_type; the new token works', async () => {
      const res = await refresh(app, alice.refreshToken);
      assert.equal(res.statusCode, 200);
      assert.deepEqual(Object.keys(res.json()).sort(), ['access_token', 'token_type']);
      assert.equal(res.json().token_type, 'bearer');
      const claims = decodeJwt(res.json().access_token);
      assert.equal(claims.sub, String(alice.user.id));
      assert.equal(claims.typ, 'access');
      assert.equal((await me(app, res.json().access_token)).statusCode, 200);
    });

    it('an access token is not a refresh token, nor the reverse', async () => {
      const accessAsRefresh = await refresh(app, alice.token);
      assert.equal(accessAsRefresh.statusCode, 401);
      assert.deepEqual(errorBody(accessAsRefresh), CREDENTIALS);
      const refreshAsAccess = await me(app, alice.refreshToken);
      assert.equal(refreshAsAccess.statusCode, 401);
      assert.deepEqual(errorBody(refreshAsAccess), CREDENTIALS);
    });

    it('garbage, a revoked, an expired-in-the-database and an unknown-jti token are 401', async () => {
      const garbage = await refresh(app, 'not-a-jwt');
      assert.equal(garbage.statusCode, 401);
      assert.deepEqual(errorBody(garbage), CREDENTIALS);

      const carol = await createUser(app);
      const jti = decodeJwt(carol.refreshToken).jti!;
      await app.ctx.db.updateTable('refresh_tokens').set({ expires_at: new Date(Date.now() - 1000) }).where('jti', '=', jti).execute();
      const expired = await refresh(app, carol.refreshToken);
      assert.equal(expired.statusCode, 401);
      assert.deepEqual(errorBody(expired), CREDENTIALS);

      const dave = await createUser(app);
      await app.ctx.db.deleteFrom('refresh_tokens').where('user_id', '=', dave.user.id).execute();
      const unknown = await refresh(app, dave.refreshToken);
      assert.equal(unknown.statusCode, 401);
      assert.deepEqual(errorBody(unknown), CREDENTIALS);
    });

    it('refresh tokens of inactive and deleted users are refused', async () => {
      const inactive = await createUser(app, { active: false });
      const res = await refresh(app, inactive.refreshToken);
      assert.equal(res.statusCode, 401);
      assert.equal(errorBody(res).error_code, 'INVALID_TOKEN');

      const gone = await createUser(app);
      await app.ctx.db.updateTable('users').set({ deleted_at: new Date() }).where('id', '=', gone.user.id).execute();
      await app.ctx.userCache.settle(); // the change reaches the user cache through its NOTIFY
      const res2 = await refresh(app, gone.refreshToken);
      assert.equal(res2.statusCode, 401);
      assert.equal(errorBody(res2).error_code, 'INVALID_TOKEN');
    });

    it('a missing refresh_token is 422; an empty one is an invalid token, 401', async () => {
      const missing = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: {} });
      assert.equal(missing.statusCode, 422);
      assert.equal(errorBody(missing).error_code, 'VALIDATION_ERROR');
      const empty = await refresh(app, '');
      assert.equal(empty.statusCode, 401);
      assert.equal(errorBody(empty).error_code, 'INVALID_TOKEN');
      const wrongType = await refresh(app, 42);
      assert.equal(wrongType.statusCode, 422);
    });
  });

  describe('GET /auth/me', () => {
    it('returns exactly the spec fields of the caller', async () => {
      const res = await api(app, alice, { method: 'GET', url: '/api/v1/auth/me' });
      assert.equal(res.statusCode, 200);
      const body = res.json();
      assert.deepEqual(Object.keys(body).sort(), ['created_at', 'email', 'full_name', 'id', 'is_active', 'is_admin']);
      assert.deepEqual(
        { id: body.id, email: body.email, full_name: body.full_name, is_active: body.is_active, is_admin: body.is_admin },
        { id: alice.user.id, email: alice.email, full_name: alice.user.full_name, is_active: true, is_admin: false },
      );
      assert.match(body.created_at, ISO);
      assert.equal(body.created_at, alice.user.created_at.toISOString());
    });

    it('an admin sees is_admin true', async () => {
      const admin = await createUser(app, { admin: true });
      const res = await api(app, admin, { method: 'GET', url: '/api/v1/auth/me' });
      assert.equal(res.json().is_admin, true);
    });

    it('no token is 401 Not authenticated; a malformed header or bad token 401 Could not validate credentials', async () => {
      const none = await app.inject({ method: 'GET', url: '/api/v1/auth/me' });
      assert.equal(none.statusCode, 401);
      assert.deepEqual(errorBody(none), { detail: 'Not authenticated', error_code: 'NOT_AUTHENTICATED' });
      assert.equal(none.headers['www-authenticate'], 'Bearer');
      for (const authorization of ['Bearer abc.def.ghi', `Basic ${Buffer.from('a:b').toString('base64')}`, 'Bearer', `Token ${alice.token}`]) {
        const bad = await app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization } });
        assert.equal(bad.statusCode, 401, authorization);
        assert.deepEqual(errorBody(bad), CREDENTIALS);
        assert.equal(bad.headers['www-authenticate'], 'Bearer');
      }
    });

    it('an inactive user gets 403 Inactive user; a deleted user 401', async () => {
      const inactive = await createUser(app, { active: false });
      const res = await api(app, inactive, { method: 'GET', url: '/api/v1/auth/me' });
      assert.equal(res.statusCode, 403);
      assert.deepEqual(errorBody(res), { detail: 'Inactive user', error_code: 'INACTIVE_USER' });

      const gone = await createUser(app);
      await app.ctx.db.updateTable('users').set({ deleted_at: new Date() }).where('id', '=', gone.user.id).execute();
      await app.ctx.userCache.settle(); // the change reaches the user cache through its NOTIFY
      const res2 = await api(app, gone, { method: 'GET', url: '/api/v1/auth/me' });
      assert.equal(res2.statusCode, 401);
      assert.deepEqual(errorBody(res2), CREDENTIALS);
    });
  });

  describe('POST /auth/logout', () => {
    it('revokes the refresh token (204, empty body); refresh and a second logout are then 401', async () => {
      const carol = await createUser(app);
      const other = await login(app, carol.email, TEST_PASSWORD); // a second session stays alive
      const out = await app.inject({ method: 'POST', url: '/api/v1/auth/logout', payload: { refresh_token: carol.refreshToken } });
      assert.equal(out.statusCode, 204);
      assert.equal(out.body, '');
      const row = (await refreshRows(app, carol.user.id)).find((r) => r.jti === decodeJwt(carol.refreshToken).jti);
      assert.ok(row?.revoked_at instanceof Date, 'revoked_at is set');

      const again = await refresh(app, carol.refreshToken);
      assert.equal(again.statusCode, 401);
      assert.deepEqual(errorBody(again), CREDENTIALS);
      const twice = await app.inject({ method: 'POST', url: '/api/v1/auth/logout', payload: { refresh_token: carol.refreshToken } });
      assert.equal(twice.statusCode, 401);
      assert.deepEqual(errorBody(twice), CREDENTIALS);

      assert.equal((await refresh(app, other.json().refresh_token)).statusCode, 200, 'other sessions are untouched');
    });

    it('an access token or garbage is 401; a missing token 422', async () => {
      const withAccess = await app.inject({ method: 'POST', url: '/api/v1/auth/logout', payload: { refresh_token: alice.token } });
      assert.equal(withAccess.statusCode, 401);
      assert.deepEqual(errorBody(withAccess), CREDENTIALS);
      const missing = await app.inject({ method: 'POST', url: '/api/v1/auth/logout', payload: {} });
      assert.equal(missing.statusCode, 422);
      assert.equal(errorBody(missing).error_code, 'VALIDATION_ERROR');
    });
  });

  describe('POST /auth/password', () => {
    const change = (who: TestUser | null, payload: object) => api(app, who, { method: 'POST', url: '/api/v1/auth/password', payload });

    it('changes the password (204), revokes every refresh token; old password 401, new password 200', async () => {
      const erin = await createUser(app);
      const second = await login(app, erin.email, TEST_PASSWORD);
      const res = await change(erin, { current_password: TEST_PASSWORD, new_password: 'a-brand-new-secret' });
      assert.equal(res.statusCode, 204);
      assert.equal(res.body, '');
      const rows = await refreshRows(app, erin.user.id);
      assert.ok(rows.length >= 2 && rows.every((r) => r.revoked_at !== null), 'every refresh token is revoked');
      assert.equal((await refresh(app, erin.refreshToken)).statusCode, 401);
      assert.equal((await refresh(app, second.json().refresh_token)).statusCode, 401);
      assert.equal((await login(app, erin.email, TEST_PASSWORD)).statusCode, 401);
      assert.equal((await login(app, erin.email, 'a-brand-new-secret')).statusCode, 200);
      const row = await app.ctx.db.selectFrom('users').selectAll().where('id', '=', erin.user.id).executeTakeFirstOrThrow();
      assert.ok(row.password_changed_at instanceof Date);
      assert.ok(row.updated_at instanceof Date);
    });

    it('a wrong current password is 401 and changes nothing', async () => {
      const frank = await createUser(app);
      const before = await app.ctx.db.selectFrom('users').select('password_hash').where('id', '=', frank.user.id).executeTakeFirstOrThrow();
      const res = await change(frank, { current_password: 'not-my-password', new_password: 'a-brand-new-secret' });
      assert.equal(res.statusCode, 401);
      assert.deepEqual(errorBody(res), { detail: 'Current password is incorrect', error_code: 'INVALID_CREDENTIALS' });
      const after = await app.ctx.db.selectFrom('users').select('password_hash').where('id', '=', frank.user.id).executeTakeFirstOrThrow();
      assert.equal(after.password_hash, before.password_hash);
      assert.equal((await refresh(app, frank.refreshToken)).statusCode, 200);
    });

    it('a new password shorter than 8 characters or longer than 72 bytes is 422 and changes nothing', async () => {
      const gina = await createUser(app);
      for (const new_password of ['short', 'é'.repeat(37), 'x'.repeat(73)]) {
        const res = await change(gina, { current_password: TEST_PASSWORD, new_password });
        assert.equal(res.statusCode, 422, new_password);
        const body = errorBody(res);
        assert.equal(body.error_code, 'VALIDATION_ERROR');
        assert.deepEqual((body.errors?.[0] as { loc: unknown }).loc, ['body', 'new_password']);
      }
      assert.equal((await login(app, gina.email, TEST_PASSWORD)).statusCode, 200);
    });

    it('no token 401, inactive 403, unknown property 422', async () => {
      const none = await change(null, { current_password: TEST_PASSWORD, new_password: 'a-brand-new-secret' });
      assert.equal(none.statusCode, 401);
      assert.equal(errorBody(none).error_code, 'NOT_AUTHENTICATED');
      const inactive = await createUser(app, { active: false });
      const res = await change(inactive, { current_password: TEST_PASSWORD, new_password: 'a-brand-new-secret' });
      assert.equal(res.statusCode, 403);
      assert.deepEqual(errorBody(res), { detail: 'Inactive user', error_code: 'INACTIVE_USER' });
      const extra = await change(alice, { current_password: TEST_PASSWORD, new_password: 'a-brand-new-secret', email: 'x@example.com' });
      assert.equal(extra.statusCode, 422);
      assert.equal(errorBody(extra).error_code, 'VALIDATION_ERROR');
    });
  });
});
