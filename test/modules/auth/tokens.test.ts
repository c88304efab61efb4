import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { SignJWT, createLocalJWKSet, decodeProtectedHeader, exportJWK, generateKeyPair, importPKCS8, jwtVerify, type JWTPayload, type JWTHeaderParameters } from 'jose';
import { TokenService } from '../../../src/modules/auth/token.service.ts';
import { buildTestApp, createUser, errorBody, waitFor, type TestUser } from '../../helpers/app.ts';

const SECRET = 'test-secret-that-is-at-least-32-bytes-long!';
const CREDENTIALS = { detail: 'Could not validate credentials', error_code: 'INVALID_TOKEN' };
const ISSUER = 'order-account-service';

type Key = Parameters<SignJWT['sign']>[0];

interface Forge {
  header?: Partial<JWTHeaderParameters>;
  claims?: JWTPayload;
  omit?: string[];
}

/** A token built by hand, valid in every respect unless `forge` says otherwise. */
async function forge(key: Key, alg: string, sub: number | string, f: Forge = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const claims: JWTPayload = {
    typ: 'access',
    sub: String(sub),
    iss: ISSUER,
    aud: ISSUER,
    iat: now,
    exp: now + 600,
    jti: crypto.randomUUID(),
    ...f.claims,
  };
  for (const k of f.omit ?? []) delete claims[k];
  return new SignJWT(claims).setProtectedHeader({ alg, typ: 'at+jwt', ...f.header } as JWTHeaderParameters).sign(key);
}

const b64url = (v: object) => Buffer.from(JSON.stringify(v)).toString('base64url');

function unsigned(header: object, payload: object): string {
  return `${b64url(header)}.${b64url(payload)}.`;
}

async function meStatus(app: FastifyInstance, token: string) {
  const res = await app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Bearer ${token}` } });
  return { status: res.statusCode, body: res.statusCode === 200 ? res.json() : errorBody(res) };
}

async function assertRejected(app: FastifyInstance, token: string, why: string) {
  const { status, body } = await meStatus(app, token);
  assert.equal(status, 401, why);
  assert.deepEqual(body, CREDENTIALS, why);
}

describe('tokens with a shared secret (HS256)', () => {
  let app: FastifyInstance;
  let alice: TestUser;
  const key = new TextEncoder().encode(SECRET);
  before(async () => {
    app = await buildTestApp(undefined, { jwtSecret: SECRET });
    alice = await createUser(app);
  });
  after(() => app.close());

  it('issues HS256 tokens without kid', () => {
    const header = decodeProtectedHeader(alice.token);
    assert.equal(header.alg, 'HS256');
    assert.equal(header.typ, 'at+jwt');
    assert.equal(header.kid, undefined);
  });

  it('a hand-made token with every claim right is accepted (control for the cases below)', async () => {
    const { status, body } = await meStatus(app, await forge(key, 'HS256', alice.user.id));
    assert.equal(status, 200);
    assert.equal((body as { id: number }).id, alice.user.id);
  });

  it('an expired token is 401 (beyond the 5 s clock tolerance)', async () => {
    const now = Math.floor(Date.now() / 1000);
    await assertRejected(app, await forge(key, 'HS256', alice.user.id, { claims: { iat: now - 1900, exp: now - 10 } }), 'expired');
  });

  it('a token that is not valid yet (nbf in the future) is 401', async () => {
    const now = Math.floor(Date.now() / 1000);
    await assertRejected(app, await forge(key, 'HS256', alice.user.id, { claims: { nbf: now + 60 } }), 'nbf');
  });

  it('missing or malformed claims are 401', async () => {
    await assertRejected(app, await forge(key, 'HS256', alice.user.id, { omit: ['sub'] }), 'no sub');
    await assertRejected(app, await forge(key, 'HS256', alice.user.id, { omit: ['exp'] }), 'no exp');
    await assertRejected(app, await forge(key, 'HS256', alice.user.id, { omit: ['jti'] }), 'no jti');
    await assertRejected(app, await forge(key, 'HS256', alice.user.id, { omit: ['iat'] }), 'no iat');
    await assertRejected(app, await forge(key, 'HS256', 'alice'), 'non-numeric sub');
    await assertRejected(app, await forge(key, 'HS256', 0), 'sub 0');
    await assertRejected(app, await forge(key, 'HS256', alice.user.id, { claims: { iss: 'someone-else' } }), 'issuer');
    await assertRejected(app, await forge(key, 'HS256', alice.user.id, { claims: { aud: 'someone-else' } }), 'audience');
    await assertRejected(app, await forge(key, 'HS256', alice.user.id, { claims: { typ: 'refresh' } }), 'typ claim refresh');
    await assertRejected(app, await forge(key, 'HS256', alice.user.id, { header: { typ: 'rt+jwt' } }), 'header typ');
    await assertRejected(app, await forge(key, 'HS256', alice.user.id, { header: { typ: 'JWT' } }), 'header typ JWT');
  });

  it('a token of a user that does not exist is 401', async () => {
    await assertRejected(app, await forge(key, 'HS256', 999999), 'unknown user');
  });

  it('a token signed with another secret is 401', async () => {
    const other = new TextEncoder().encode('another-secret-that-is-also-32-bytes-long');
    await assertRejected(app, await forge(other, 'HS256', alice.user.id), 'other secret');
  });

  it('alg none (with and without a signature part) is 401', async () => {
    const now = Math.floor(Date.now() / 1000);
    const payload = { typ: 'access', sub: String(alice.user.id), iss: ISSUER, aud: ISSUER, iat: now, exp: now + 600, jti: crypto.randomUUID() };
    await assertRejected(app, unsigned({ alg: 'none', typ: 'at+jwt' }, payload), 'alg none');
    await assertRejected(app, unsigned({ alg: 'None', typ: 'at+jwt' }, payload), 'alg None');
    await assertRejected(app, `${unsigned({ alg: 'none', typ: 'at+jwt' }, payload)}c2ln`, 'alg none with a signature');
  });

  it('another HMAC algorithm with the right secret is 401 (the algorithm is pinned)', async () => {
    await assertRejected(app, await forge(key, 'HS512', alice.user.id), 'HS512');
    await assertRejected(app, await forge(key, 'HS384', alice.user.id), 'HS384');
  });

  it('a key the token brings along (jwk, jku or x5u header) is never used', async () => {
    const attacker = await generateKeyPair('ES256');
    const jwk = await exportJWK(attacker.publicKey);
    await assertRejected(app, await forge(attacker.privateKey, 'ES256', alice.user.id, { header: { jwk } }), 'jwk');
    await assertRejected(app, await forge(attacker.privateKey, 'ES256', alice.user.id, { header: { jku: 'https://attacker.example/jwks.json' } }), 'jku');
    await assertRejected(app, await forge(attacker.privateKey, 'ES256', alice.user.id, { header: { x5u: 'https://attacker.example/cert.pem' } }), 'x5u');
  });

  it('a tampered payload is 401', async () => {
    const other = await createUser(app);
    const [h, , s] = alice.token.split('.');
    const payload = { ...JSON.parse(Buffer.from(alice.token.split('.')[1], 'base64url').toString()), sub: String(other.user.id) };
    await assertRejected(app, `${h}.${b64url(payload)}.${s}`, 'tampered');
  });

  it('there is no JWKS with a shared secret (404)', async () => {
    const res = await app.inject({ method: 'GET', url: '/.well-known/jwks.json' });
    assert.equal(res.statusCode, 404);
    assert.equal(errorBody(res).error_code, 'NOT_FOUND');
  });

  it('an access token really expires: a 1-second token is refused after the tolerance', { timeout: 90000 }, async (t) => {
    const short = await buildTestApp(t, { jwtSecret: SECRET, accessTokenTtlSeconds: 1 });
    const bob = await createUser(short);
    assert.equal((await meStatus(short, bob.token)).status, 200);
    // exp + 5 s tolerance: poll until it is refused (never sleeping a fixed time). The refusal is
    // compared with the token's own exp, not with how long the test waited: a busy machine only
    // makes the wait longer.
    const { exp } = JSON.parse(Buffer.from(bob.token.split('.')[1], 'base64url').toString()) as { exp: number };
    const refusedAt = await waitFor(async () => ((await meStatus(short, bob.token)).status === 401 ? Date.now() / 1000 : undefined), 60000, 250);
    assert.ok(refusedAt >= exp + 4, `refused only after the clock tolerance (${(refusedAt - exp).toFixed(1)} s after exp)`);
    // the refresh token still gives a fresh access token
    const res = await short.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: bob.refreshToken } });
    assert.equal(res.statusCode, 200);
    assert.equal((await meStatus(short, res.json().access_token)).status, 200);
  });
});

describe('tokens with a generated key pair (ES256, JWKS)', () => {
  let app: FastifyInstance;
  let alice: TestUser;
  let privateKey: Key;
  let kid: string;
  before(async () => {
    app = await buildTestApp(undefined);
    alice = await createUser(app);
    const pem = await fs.readFile(path.join(app.ctx.config.dataDir, 'jwt-private.pem'), 'utf8');
    privateKey = await importPKCS8(pem, 'ES256');
    kid = decodeProtectedHeader(alice.token).kid!;
  });
  after(() => app.close());

  it('keeps the generated key in DATA_DIR with mode 0600', async () => {
    const st = await fs.stat(path.join(app.ctx.config.dataDir, 'jwt-private.pem'));
    assert.equal(st.mode & 0o777, 0o600);
  });

  it('processes starting at once on a new DATA_DIR all sign with one key, written whole, with no file left beside it', async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'oas-key-'));
    try {
      const config = { ...app.ctx.config, dataDir, jwtPrivateKey: undefined, jwtSecret: undefined };
      const services = await Promise.all(Array.from({ length: 4 }, () => TokenService.create(config)));
      const kids = new Set(services.map((s) => s.jwks().keys[0]?.kid));
      assert.equal(kids.size, 1, 'one key');
      assert.deepEqual(await fs.readdir(dataDir), ['jwt-private.pem']);
      const pem = await fs.readFile(path.join(dataDir, 'jwt-private.pem'), 'utf8');
      assert.match(pem, /^-----BEGIN PRIVATE KEY-----\n[\s\S]+\n-----END PRIVATE KEY-----\n$/);
      // a later start reads the same key
      assert.equal((await TokenService.create(config)).jwks().keys[0]?.kid, [...kids][0]);
    } finally {
      await fs.rm(dataDir, { recursive: true, force: true });
    }
  });

  it('issues ES256 tokens with a kid that the JWKS publishes; the JWKS verifies them', async () => {
    const header = decodeProtectedHeader(alice.token);
    assert.equal(header.alg, 'ES256');
    const res = await app.inject({ method: 'GET', url: '/.well-known/jwks.json' });
    assert.equal(res.statusCode, 200);
    const jwks = res.json();
    assert.equal(jwks.keys.length, 1);
    const [k] = jwks.keys;
    assert.deepEqual(Object.keys(k).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
    assert.deepEqual({ kty: k.kty, crv: k.crv, alg: k.alg, use: k.use, kid: k.kid }, { kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig', kid });
    assert.equal(k.d, undefined, 'never the private part');
    const { payload } = await jwtVerify(alice.token, createLocalJWKSet(jwks), { issuer: ISSUER, audience: ISSUER });
    assert.equal(payload.sub, String(alice.user.id));
    assert.equal(payload.typ, 'access');
    assert.equal(typeof payload.jti, 'string');
  });

  it('a hand-made token signed with the service key is accepted (control)', async () => {
    assert.equal((await meStatus(app, await forge(privateKey, 'ES256', alice.user.id, { header: { kid } }))).status, 200);
  });

  it('an expired token signed with the service key is 401', async () => {
    const now = Math.floor(Date.now() / 1000);
    await assertRejected(app, await forge(privateKey, 'ES256', alice.user.id, { header: { kid }, claims: { iat: now - 2000, exp: now - 10 } }), 'expired');
  });

  it('a token without kid or with an unknown kid is 401', async () => {
    await assertRejected(app, await forge(privateKey, 'ES256', alice.user.id), 'no kid');
    await assertRejected(app, await forge(privateKey, 'ES256', alice.user.id, { header: { kid: 'some-other-kid' } }), 'unknown kid');
  });

  it('a token signed with another key (even under the right kid) is 401', async () => {
    const { privateKey: other } = crypto.generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    await assertRejected(app, await forge(other, 'ES256', alice.user.id, { header: { kid } }), 'other EC key');
    const { privateKey: ed } = crypto.generateKeyPairSync('ed25519');
    await assertRejected(app, await forge(ed, 'EdDSA', alice.user.id, { header: { kid } }), 'other EdDSA key');
  });

  it('an HS256 token is 401, even one keyed with the public key (algorithm confusion)', async () => {
    const jwk = (await app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json().keys[0];
    const publicPem = crypto.createPublicKey({ key: jwk, format: 'jwk' }).export({ format: 'pem', type: 'spki' }).toString();
    const der = crypto.createPublicKey(publicPem).export({ format: 'der', type: 'spki' });
    for (const hmacKey of [publicPem, JSON.stringify(jwk), SECRET].map((k) => new TextEncoder().encode(k)).concat(new Uint8Array(der))) {
      await assertRejected(app, await forge(hmacKey, 'HS256', alice.user.id, { header: { kid } }), 'HS256 with kid');
      await assertRejected(app, await forge(hmacKey, 'HS256', alice.user.id), 'HS256 without kid');
    }
  });

  it('an attacker key presented in the header under the service kid is 401', async () => {
    const attacker = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(attacker.publicKey)), kid };
    await assertRejected(app, await forge(attacker.privateKey, 'ES256', alice.user.id, { header: { kid, jwk } }), 'jwk + kid');
    await assertRejected(app, await forge(attacker.privateKey, 'ES256', alice.user.id, { header: { kid, jku: 'https://attacker.example/jwks' } }), 'jku + kid');
  });

  it('alg none is 401', async () => {
    const now = Math.floor(Date.now() / 1000);
    const payload = { typ: 'access', sub: String(alice.user.id), iss: ISSUER, aud: ISSUER, iat: now, exp: now + 600, jti: crypto.randomUUID() };
    await assertRejected(app, unsigned({ alg: 'none', typ: 'at+jwt', kid }, payload), 'alg none');
  });

  it('a refresh token is not an access token; an access token is not a refresh token', async () => {
    await assertRejected(app, alice.refreshToken, 'refresh as access');
    const res = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: alice.token } });
    assert.equal(res.statusCode, 401);
    assert.deepEqual(errorBody(res), CREDENTIALS);
  });

  it('the same key survives a restart on the same DATA_DIR (tokens stay valid)', async (t) => {
    const again = await buildTestApp(t, { dataDir: app.ctx.config.dataDir });
    const jwks = (await again.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json();
    assert.equal(jwks.keys[0].kid, kid);
    const { payload } = await jwtVerify(alice.token, createLocalJWKSet(jwks));
    assert.equal(payload.sub, String(alice.user.id));
  });
});
