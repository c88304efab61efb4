import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { SignJWT, exportJWK, generateKeyPair, type JWTHeaderParameters, type JWTPayload } from 'jose';
import { errorBody, testConfig } from '../helpers/app.ts';
import { buildApp } from '../../src/app.ts';
import type { Config } from '../../src/config.ts';
import { directUser, snapshot } from '../helpers/security.ts';
import type { TestUser } from '../helpers/app.ts';

const SECRET = 'jwt-attack-suite-secret-0123456789abcdef!';
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);

async function appWith(overrides: Partial<Config>): Promise<FastifyInstance> {
  const config = await testConfig(undefined, overrides);
  return buildApp(config);
}

/** The claims the service issues, for `sub`; each attack changes one thing. */
function claims(app: FastifyInstance, sub: number, typ = 'access', extra: JWTPayload = {}): JWTPayload {
  const t = now();
  return {
    sub: String(sub),
    typ,
    iss: app.ctx.config.jwtIssuer,
    aud: app.ctx.config.jwtAudience,
    iat: t,
    exp: t + 600,
    jti: crypto.randomUUID(),
    ...extra,
  };
}

async function sign(payload: JWTPayload, header: JWTHeaderParameters, key: Parameters<SignJWT['sign']>[0]): Promise<string> {
  return new SignJWT(payload).setProtectedHeader(header).sign(key);
}

async function assertRejected(app: FastifyInstance, token: string, label: string): Promise<void> {
  const before = await snapshot(app);
  for (const url of ['/api/v1/auth/me', '/api/v1/users']) {
    const res = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.statusCode, 401, `${label} at ${url}: ${res.statusCode} ${res.body}`);
    assert.deepEqual(errorBody(res), { detail: 'Could not validate credentials', error_code: 'INVALID_TOKEN' }, label);
  }
  // a forged admin token must not create anything either
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/users',
    headers: { authorization: `Bearer ${token}` },
    payload: { email: `forged-${crypto.randomUUID()}@example.com`, full_name: 'Forged', password: 'forged-password' },
  });
  assert.equal(res.statusCode, 401, `${label} at POST /users`);
  assert.equal(await snapshot(app), before, `${label}: database unchanged`);
}

async function assertAccepted(app: FastifyInstance, token: string, label: string): Promise<void> {
  const res = await app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Bearer ${token}` } });
  assert.equal(res.statusCode, 200, `${label}: ${res.body}`);
}

describe('JWT attacks, HS256 configured (JWT_SECRET)', () => {
  let app: FastifyInstance;
  let admin: TestUser;
  const key = new TextEncoder().encode(SECRET);
  const hs = { alg: 'HS256', typ: 'at+jwt' };
  before(async () => {
    app = await appWith({ jwtSecret: SECRET, jwtPrivateKey: undefined });
    admin = await directUser(app, { admin: true });
  });
  after(() => app.close());

  it('control: a token forged exactly like the service issues it is accepted (the harness is right)', async () => {
    await assertAccepted(app, await sign(claims(app, admin.user.id), hs, key), 'control');
    // 3 s past expiry is inside the 5 s clock tolerance
    await assertAccepted(app, await sign(claims(app, admin.user.id, 'access', { exp: now() - 3 }), hs, key), 'tolerance');
  });

  it('alg "none" (unsigned) is 401', async () => {
    const payload = b64(claims(app, admin.user.id));
    for (const alg of ['none', 'None', 'NONE']) {
      await assertRejected(app, `${b64({ alg, typ: 'at+jwt' })}.${payload}.`, `alg ${alg}`);
    }
  });

  it('HS512 or HS384 with the right secret is 401 (algorithm pinned)', async () => {
    await assertRejected(app, await sign(claims(app, admin.user.id), { alg: 'HS512', typ: 'at+jwt' }, key), 'HS512');
    await assertRejected(app, await sign(claims(app, admin.user.id), { alg: 'HS384', typ: 'at+jwt' }, key), 'HS384');
  });

  it('a token signed with another secret is 401', async () => {
    const other = new TextEncoder().encode('another-secret-of-at-least-32-bytes-long!!');
    await assertRejected(app, await sign(claims(app, admin.user.id), hs, other), 'wrong secret');
  });

  it('missing exp, iat, jti or sub is 401', async () => {
    for (const drop of ['exp', 'iat', 'jti', 'sub'] as const) {
      const payload = claims(app, admin.user.id);
      delete payload[drop];
      await assertRejected(app, await sign(payload, hs, key), `no ${drop}`);
    }
  });

  it('expired by 10 s, and nbf in the future, are 401', async () => {
    await assertRejected(app, await sign(claims(app, admin.user.id, 'access', { iat: now() - 700, exp: now() - 10 }), hs, key), 'expired');
    await assertRejected(app, await sign(claims(app, admin.user.id, 'access', { nbf: now() + 60 }), hs, key), 'nbf');
  });

  it('wrong issuer or audience is 401', async () => {
    await assertRejected(app, await sign(claims(app, admin.user.id, 'access', { iss: 'someone-else' }), hs, key), 'iss');
    await assertRejected(app, await sign(claims(app, admin.user.id, 'access', { aud: 'someone-else' }), hs, key), 'aud');
    await assertRejected(app, await sign(claims(app, admin.user.id, 'access', { aud: ['someone-else'] }), hs, key), 'aud list');
  });

  it('wrong or missing type (header typ or typ claim) is 401', async () => {
    await assertRejected(app, await sign(claims(app, admin.user.id), { alg: 'HS256' }, key), 'no header typ');
    await assertRejected(app, await sign(claims(app, admin.user.id), { alg: 'HS256', typ: 'JWT' }, key), 'typ JWT');
    await assertRejected(app, await sign(claims(app, admin.user.id, 'refresh'), hs, key), 'typ claim refresh');
    const payload = claims(app, admin.user.id);
    delete payload.typ;
    await assertRejected(app, await sign(payload, hs, key), 'no typ claim');
  });

  it('a subject that is not a live user id is 401', async () => {
    for (const sub of ['999999', '0', '-1', 'admin', '1 OR 1=1', '1e3']) {
      await assertRejected(app, await sign(claims(app, admin.user.id, 'access', { sub }), hs, key), `sub ${sub}`);
    }
  });

  it('an edited payload (sub changed, signature kept) is 401', async () => {
    const victim = await directUser(app);
    const [h, , s] = victim.token.split('.');
    const edited = `${h}.${b64({ ...claims(app, admin.user.id) })}.${s}`;
    await assertRejected(app, edited, 'edited payload');
    await assertAccepted(app, victim.token, 'the original');
  });

  it('injected jku / jwk / x5u headers are ignored (an attacker key is never used)', async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const jwk = await exportJWK(publicKey);
    const payload = claims(app, admin.user.id);
    await assertRejected(app, await sign(payload, { alg: 'ES256', typ: 'at+jwt', jwk }, privateKey), 'jwk');
    await assertRejected(app, await sign(payload, { alg: 'ES256', typ: 'at+jwt', jku: 'https://attacker.example/jwks.json' }, privateKey), 'jku');
    await assertRejected(app, await sign(payload, { alg: 'ES256', typ: 'at+jwt', x5u: 'https://attacker.example/cert.pem' }, privateKey), 'x5u');
  });

  it('a refresh token as bearer is 401; an access token at /auth/refresh is 401', async () => {
    await assertRejected(app, admin.refreshToken, 'refresh as bearer');
    const before = await snapshot(app);
    const res = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: admin.token } });
    assert.equal(res.statusCode, 401);
    assert.equal(errorBody(res).error_code, 'INVALID_TOKEN');
    const logout = await app.inject({ method: 'POST', url: '/api/v1/auth/logout', payload: { refresh_token: admin.token } });
    assert.equal(logout.statusCode, 401);
    assert.equal(await snapshot(app), before);
  });

  it('garbage in the Authorization header is 401, never 500', async () => {
    for (const value of ['Bearer', 'Bearer ', 'Basic YWRtaW46YWRtaW4=', 'Bearer a.b', 'Bearer ....', `Bearer ${'a'.repeat(8000)}`, 'Bearer eyJ.eyJ.x']) {
      const res = await app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: value } });
      assert.equal(res.statusCode, 401, `${value.slice(0, 30)}: ${res.statusCode}`);
    }
  });
});

describe('JWT attacks, ES256 configured (JWT_PRIVATE_KEY)', () => {
  let app: FastifyInstance;
  let user: TestUser;
  let privateKey: crypto.KeyObject;
  let publicPem: string;
  let kid: string;
  before(async () => {
    const pair = crypto.generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    privateKey = pair.privateKey;
    publicPem = pair.publicKey.export({ format: 'pem', type: 'spki' }).toString();
    app = await appWith({ jwtPrivateKey: pair.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(), jwtSecret: undefined });
    user = await directUser(app);
    kid = JSON.parse(Buffer.from(user.token.split('.')[0]!, 'base64url').toString()).kid;
  });
  after(() => app.close());

  it('control: the service key, its kid and ES256 are accepted; the JWKS serves only the public key', async () => {
    await assertAccepted(app, await sign(claims(app, user.user.id), { alg: 'ES256', typ: 'at+jwt', kid }, privateKey), 'control');
    const jwks = (await app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json<{ keys: Record<string, unknown>[] }>();
    assert.equal(jwks.keys.length, 1);
    assert.equal(jwks.keys[0]!.kid, kid);
    assert.equal(jwks.keys[0]!.alg, 'ES256');
    assert.equal(jwks.keys[0]!.d, undefined, 'no private part');
  });

  it('key confusion: HS256 signed with the public key (PEM or JWK bytes) is 401', async () => {
    const payload = claims(app, user.user.id);
    await assertRejected(app, await sign(payload, { alg: 'HS256', typ: 'at+jwt', kid }, new TextEncoder().encode(publicPem)), 'HS256/PEM');
    const der = crypto.createPublicKey(publicPem).export({ format: 'der', type: 'spki' });
    await assertRejected(app, await sign(payload, { alg: 'HS256', typ: 'at+jwt', kid }, new Uint8Array(der)), 'HS256/DER');
    await assertRejected(app, await sign(payload, { alg: 'HS256', typ: 'at+jwt' }, new TextEncoder().encode(publicPem)), 'HS256 no kid');
  });

  it('an unknown or missing kid is 401', async () => {
    const payload = claims(app, user.user.id);
    await assertRejected(app, await sign(payload, { alg: 'ES256', typ: 'at+jwt', kid: 'nope' }, privateKey), 'unknown kid');
    await assertRejected(app, await sign(payload, { alg: 'ES256', typ: 'at+jwt' }, privateKey), 'no kid');
  });

  it('an attacker key presented in jwk with the service kid is 401', async () => {
    const attacker = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(attacker.publicKey)), kid };
    const payload = claims(app, user.user.id);
    await assertRejected(app, await sign(payload, { alg: 'ES256', typ: 'at+jwt', kid, jwk }, attacker.privateKey), 'jwk + kid');
    await assertRejected(app, await sign(payload, { alg: 'ES256', typ: 'at+jwt', kid, jku: 'https://attacker.example/jwks' }, attacker.privateKey), 'jku + kid');
  });

  it('alg none with the service kid is 401', async () => {
    await assertRejected(app, `${b64({ alg: 'none', typ: 'at+jwt', kid })}.${b64(claims(app, user.user.id))}.`, 'none');
  });
});
