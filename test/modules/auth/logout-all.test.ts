import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { TokenService } from '../../../src/modules/auth/token.service.ts';
import { api, createUser, errorBody, TEST_PASSWORD, twoApps } from '../../helpers/app.ts';
import { login, me, refresh } from './auth.helpers.ts';

const logoutAll = (app: FastifyInstance, accessToken: string) =>
  app.inject({ method: 'POST', url: '/api/v1/auth/logout-all', headers: { authorization: `Bearer ${accessToken}` } });

/**
 * Ending every session of a user: access tokens issued before a sign-out everywhere, a password
 * change or a reset are refused on every API process at once, from the user row each process
 * caches (no database round trip per request).
 */
describe('sign-out everywhere and the access-token cut-off', () => {
  let a: FastifyInstance;
  let b: FastifyInstance;
  before(async () => {
    [a, b] = await twoApps(undefined);
  });

  it('POST /auth/logout-all: 204; every refresh token revoked; every access token refused on both instances; a new sign-in works at once', async () => {
    const user = await createUser(a);
    const other = (await login(b, user.email, TEST_PASSWORD)).json<{ access_token: string; refresh_token: string }>();
    for (const app of [a, b]) for (const token of [user.token, other.access_token]) assert.equal((await me(app, token)).statusCode, 200);

    const res = await logoutAll(a, user.token);
    assert.equal(res.statusCode, 204);
    assert.equal(res.body, '');
    await b.ctx.userCache.settle();
    for (const app of [a, b]) {
      for (const token of [user.token, other.access_token]) {
        const old = await me(app, token);
        assert.equal(old.statusCode, 401);
        assert.equal(errorBody(old).error_code, 'INVALID_TOKEN');
        assert.equal(old.headers['www-authenticate'], 'Bearer');
      }
      for (const token of [user.refreshToken, other.refresh_token]) assert.equal((await refresh(app, token)).statusCode, 401);
    }
    const live = await a.ctx.db.selectFrom('refresh_tokens').select('jti').where('user_id', '=', user.user.id).where('revoked_at', 'is', null).execute();
    assert.deepEqual(live, []);
    // a dead token cannot sign out again
    assert.equal((await logoutAll(b, user.token)).statusCode, 401);

    // a sign-in right after (most likely within the same second) gets tokens that work everywhere
    const fresh = await login(b, user.email, TEST_PASSWORD);
    assert.equal(fresh.statusCode, 200);
    const { access_token, refresh_token } = fresh.json<{ access_token: string; refresh_token: string }>();
    assert.equal((await me(a, access_token)).statusCode, 200);
    assert.equal((await me(b, access_token)).statusCode, 200);
    const renewed = await refresh(a, refresh_token);
    assert.equal(renewed.statusCode, 200);
    assert.equal((await me(b, renewed.json().access_token)).statusCode, 200);
    // other users are not touched
    const bystander = await createUser(a);
    await logoutAll(a, access_token);
    assert.equal((await me(b, bystander.token)).statusCode, 200);
  });

  it('cut-offs cannot tie with an issue time: a token issued between two cut-offs of the same second dies with the second one', async () => {
    const user = await createUser(a);
    assert.equal((await logoutAll(a, user.token)).statusCode, 204);
    // signed in right after the first cut-off (most likely within its second), signed out at once again
    const between = (await login(a, user.email, TEST_PASSWORD)).json<{ access_token: string; refresh_token: string }>();
    assert.equal((await me(a, between.access_token)).statusCode, 200);
    assert.equal((await logoutAll(b, between.access_token)).statusCode, 204);
    await a.ctx.userCache.settle();
    for (const app of [a, b]) {
      assert.equal((await me(app, between.access_token)).statusCode, 401, 'the token of the earlier generation is refused');
      assert.equal((await refresh(app, between.refresh_token)).statusCode, 401);
    }
    const row = await a.ctx.db.selectFrom('users').select('sessions_generation').where('id', '=', user.user.id).executeTakeFirstOrThrow();
    assert.equal(row.sessions_generation, 2, 'each cut-off is one generation');
    const after = (await login(a, user.email, TEST_PASSWORD)).json<{ access_token: string }>();
    assert.equal((await me(b, after.access_token)).statusCode, 200, 'a sign-in after the cut-offs works at once');
  });

  it('a sign-in that read the user just before a cut-off issues tokens the cut-off refuses (its generation)', async () => {
    const user = await createUser(a);
    const tokens = await TokenService.create(a.ctx.config);
    // what a sign-in racing the cut-off issues: the generation it read, from before the cut-off
    const racing = await tokens.issue(user.user.id, 'access', 0);
    assert.equal((await me(a, racing.token)).statusCode, 200);
    assert.equal((await logoutAll(a, user.token)).statusCode, 204);
    assert.equal((await me(a, racing.token)).statusCode, 401);
    assert.equal((await me(a, (await tokens.issue(user.user.id, 'access', 1)).token)).statusCode, 200, 'the generation after the cut-off is live');
  });

  it('a password change refuses the access tokens issued before it, on both instances', async () => {
    const user = await createUser(a);
    assert.equal((await me(b, user.token)).statusCode, 200);
    const res = await api(a, user, { method: 'POST', url: '/api/v1/auth/password', payload: { current_password: TEST_PASSWORD, new_password: 'changed-password-1' } });
    assert.equal(res.statusCode, 204);
    await b.ctx.userCache.settle();
    assert.equal((await me(a, user.token)).statusCode, 401);
    assert.equal((await me(b, user.token)).statusCode, 401);
    const fresh = await login(a, user.email, 'changed-password-1');
    assert.equal((await me(b, fresh.json().access_token)).statusCode, 200);
  });

  it('a refresh token stored after the cut-off but issued before it (a sign-in racing it) gives no access token', async () => {
    const user = await createUser(a);
    const tokens = await TokenService.create(a.ctx.config);
    const early = await tokens.issue(user.user.id, 'refresh');
    assert.equal((await logoutAll(a, user.token)).statusCode, 204);
    await a.ctx.db.insertInto('refresh_tokens').values({ jti: early.jti, user_id: user.user.id, expires_at: early.expiresAt }).execute();
    const res = await refresh(a, early.token);
    assert.equal(res.statusCode, 401);
    assert.equal(errorBody(res).error_code, 'INVALID_TOKEN');
  });

  it('without a token 401 NOT_AUTHENTICATED; an inactive user 403 INACTIVE_USER', async () => {
    const none = await a.inject({ method: 'POST', url: '/api/v1/auth/logout-all' });
    assert.equal(none.statusCode, 401);
    assert.equal(errorBody(none).error_code, 'NOT_AUTHENTICATED');
    const inactive = await createUser(a, { active: false });
    const res = await logoutAll(a, inactive.token);
    assert.equal(res.statusCode, 403);
    assert.equal(errorBody(res).error_code, 'INACTIVE_USER');
  });
});
