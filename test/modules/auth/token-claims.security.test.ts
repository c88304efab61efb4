import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { SignJWT, type JWTPayload } from 'jose';
import { buildTestApp, createUser, errorBody } from '../../helpers/app.ts';

const SECRET = 'token-claims-suite-secret-0123456789abcdef!';
const now = () => Math.floor(Date.now() / 1000);

/** An access token signed with the app's own secret, exactly as the service issues it, but for `claims`. */
function forge(app: FastifyInstance, claims: JWTPayload): Promise<string> {
  const t = now();
  return new SignJWT({
    typ: 'access',
    iss: app.ctx.config.jwtIssuer,
    aud: app.ctx.config.jwtAudience,
    iat: t,
    exp: t + 600,
    jti: crypto.randomUUID(),
    ...claims,
  })
    .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt' })
    .sign(new TextEncoder().encode(SECRET));
}

async function me(app: FastifyInstance, token: string) {
  return app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Bearer ${token}` } });
}

describe('access token claims', () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestApp(undefined, { jwtSecret: SECRET });
  });

  it('a subject beyond the user id range is 401 INVALID_TOKEN, not a 500 from the database', async () => {
    for (const sub of ['9999999999', '2147483648']) {
      const res = await me(app, await forge(app, { sub }));
      assert.equal(res.statusCode, 401, `sub ${sub}: ${res.statusCode} ${res.body}`);
      assert.equal(errorBody(res).error_code, 'INVALID_TOKEN');
    }
    // the largest id is a valid subject that names no user: 401 as well
    assert.equal((await me(app, await forge(app, { sub: '2147483647' }))).statusCode, 401);
  });

  it('an `iat` more than 60 s in the future is refused; within the skew it is accepted', async () => {
    const user = await createUser(app);
    const sub = String(user.user.id);
    const ahead = await me(app, await forge(app, { sub, iat: now() + 120, exp: now() + 720 }));
    assert.equal(ahead.statusCode, 401, ahead.body);
    assert.equal(errorBody(ahead).error_code, 'INVALID_TOKEN');
    const farAhead = await me(app, await forge(app, { sub, iat: now() + 86400 * 365, exp: now() + 86400 * 366 }));
    assert.equal(farAhead.statusCode, 401);
    const slightlyAhead = await me(app, await forge(app, { sub, iat: now() + 30 }));
    assert.equal(slightlyAhead.statusCode, 200, slightlyAhead.body);
  });

  it('finding 4: a token whose exp − iat exceeds the configured lifetime (exp = 10¹²) is refused; the configured lifetime itself is accepted', async () => {
    const user = await createUser(app);
    const sub = String(user.user.id);
    const t = now();
    const forever = await me(app, await forge(app, { sub, iat: t, exp: 1e12 }));
    assert.equal(forever.statusCode, 401, forever.body);
    assert.equal(errorBody(forever).error_code, 'INVALID_TOKEN');
    const ttl = app.ctx.config.accessTokenTtlSeconds;
    assert.equal((await me(app, await forge(app, { sub, iat: t, exp: t + ttl + 1 }))).statusCode, 401, 'one second over');
    assert.equal((await me(app, await forge(app, { sub, iat: t, exp: t + ttl }))).statusCode, 200, 'exactly the lifetime');
  });

  it('the session generation: a token of an earlier one is refused whatever its iat; a token without one (an earlier release) is judged by iat', async () => {
    const user = await createUser(app);
    const sub = String(user.user.id);
    const legacy = await forge(app, { sub });
    const before = await forge(app, { sub, sgen: 0 });
    assert.equal((await me(app, legacy)).statusCode, 200, 'no cut-off yet');
    assert.equal((await me(app, before)).statusCode, 200);
    const out = await app.inject({ method: 'POST', url: '/api/v1/auth/logout-all', headers: { authorization: `Bearer ${before}` } });
    assert.equal(out.statusCode, 204);
    // issued in this very second, or a minute ahead: the generation decides, not the time
    for (const token of [before, legacy, await forge(app, { sub, sgen: 0, iat: now() + 30 })]) {
      const res = await me(app, token);
      assert.equal(res.statusCode, 401, res.body);
      assert.equal(errorBody(res).error_code, 'INVALID_TOKEN');
    }
    assert.equal((await me(app, await forge(app, { sub, sgen: 1 }))).statusCode, 200, 'the current generation, in the same second as the cut-off');
    for (const sgen of [-1, 1.5, '1']) assert.equal((await me(app, await forge(app, { sub, sgen }))).statusCode, 401, `sgen ${String(sgen)}`);

    // a cut-off made by an earlier release (the next whole second, no generation) still judges its tokens by iat
    const upgraded = await createUser(app);
    const second = now() + 1;
    await app.ctx.db.updateTable('users').set({ sessions_valid_after: new Date(second * 1000) }).where('id', '=', upgraded.user.id).execute();
    await app.ctx.userCache.settle();
    const old = String(upgraded.user.id);
    assert.equal((await me(app, await forge(app, { sub: old, iat: second - 1 }))).statusCode, 401, 'issued before the old cut-off');
    assert.equal((await me(app, await forge(app, { sub: old, iat: second }))).statusCode, 200, 'issued at it');
  });
});
