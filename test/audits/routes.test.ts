import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Fastify, { type FastifyInstance, type HTTPMethods } from 'fastify';
import { registerAuth } from '../../src/http/auth.ts';
import { errorBody, type TestUser, buildTestApp, createUser, snapshot } from '../helpers/app.ts';

const LEVELS = ['public', 'user', 'admin', 'signature'];
const BODY_METHODS = ['POST', 'PUT', 'PATCH'];
const ALL_METHODS: HTTPMethods[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** '/api/v1/users/:user_id' → '/api/v1/users/1' */
const concrete = (url: string) => url.replace(/:[A-Za-z_]+/g, '1');

type Schema = Record<string, unknown>;

/** Every object schema inside `schema` that does not forbid unknown properties, as JSON paths. */
function openObjects(schema: unknown, path = 'body'): string[] {
  if (!schema || typeof schema !== 'object') return [];
  const s = schema as Schema;
  const out: string[] = [];
  if (s.type === 'object' || s.properties) {
    if (s.additionalProperties !== false) out.push(path);
    for (const [k, v] of Object.entries((s.properties as Schema | undefined) ?? {})) out.push(...openObjects(v, `${path}.${k}`));
  }
  if (s.items) out.push(...openObjects(s.items, `${path}[]`));
  for (const key of ['anyOf', 'oneOf', 'allOf']) {
    const list = s[key];
    if (Array.isArray(list)) list.forEach((v, i) => out.push(...openObjects(v, `${path}<${key}${i}>`)));
  }
  return out;
}

describe('route audit (deny by default)', () => {
  let app: FastifyInstance;
  let user: TestUser;
  let inactive: TestUser;
  before(async () => {
    app = await buildTestApp(undefined);
    await app.ready();
    user = await createUser(app, { login: false });
    inactive = await createUser(app, { login: false });
    await app.ctx.db.updateTable('users').set({ is_active: false }).where('id', '=', inactive.user.id).execute();
    await app.ctx.userCache.settle(); // the change reaches the user cache through its NOTIFY
  });
  after(() => app.close());

  it('every registered route declares its auth requirement', () => {
    assert.ok(app.routeTable.length > 30, `${app.routeTable.length} routes recorded`);
    const undeclared = app.routeTable.filter((r) => !r.auth || !LEVELS.includes(r.auth));
    assert.deepEqual(undeclared, []);
    // the route families of the spec are all there
    for (const url of ['/api/v1/auth/login', '/api/v1/users/:user_id', '/api/v1/orders/:order_id', '/api/v1/items/:item_id', '/api/v1/webhooks/subscriptions', '/api/v1/webhooks/orders/create']) {
      assert.ok(app.routeTable.some((r) => r.url === url), url);
    }
  });

  it('a route without config.auth cannot even be registered', async () => {
    const bare = Fastify();
    registerAuth(bare, { verifyAccessToken: async () => null, loadUser: async () => undefined, userCache: app.ctx.userCache });
    assert.throws(() => bare.get('/forgotten', async () => ({ secret: true })), /does not declare config.auth/);
    assert.throws(() => bare.get('/typo', { config: { auth: 'users' as never } }, async () => ({})), /does not declare config.auth/);
    await bare.close();
  });

  it('only the documented routes are public', () => {
    const open = app.routeTable
      .filter((r) => r.auth === 'public' || r.auth === 'signature')
      .filter((r) => !r.url.startsWith('/docs'))
      .map((r) => `${r.method} ${r.url}`)
      .filter((r) => !r.startsWith('HEAD '))
      .sort();
    assert.deepEqual(open, [
      'GET /',
      'GET /.well-known/jwks.json',
      // the console's page and assets (src/http/console.ts): no data, the API it calls checks each request
      'GET /console',
      'GET /console/*',
      'GET /console/assets/:file',
      'GET /console/favicon.svg',
      'GET /health',
      'GET /metrics',
      'GET /openapi.json',
      'GET /ready',
      // the token in the body is the credential (issue 44: the links of an e-mail change)
      'POST /api/v1/auth/email-change/revert',
      'POST /api/v1/auth/login',
      'POST /api/v1/auth/logout',
      'POST /api/v1/auth/password-recovery',
      'POST /api/v1/auth/refresh',
      'POST /api/v1/auth/reset-password',
      'POST /api/v1/auth/verify-email',
      'POST /api/v1/webhooks/orders/cancelled',
      'POST /api/v1/webhooks/orders/create',
    ]
      // v2 serves the same routes, so the same ones are public there; and it has its own document
      .flatMap((r) => (r.includes(' /api/v1/') ? [r, r.replace(' /api/v1/', ' /api/v2/')] : [r]))
      .concat('GET /openapi-v2.json')
      .sort()
      .filter((r) => app.routeTable.some((x) => `${x.method} ${x.url}` === r)));
  });

  it('every request body schema rejects unknown properties, at every level', () => {
    const open: string[] = [];
    for (const r of app.routeTable) {
      if (!r.body || r.auth === 'signature') continue;
      for (const p of openObjects(r.body)) open.push(`${r.method} ${r.url} ${p}`);
    }
    assert.deepEqual(open, []);
    // and every route that takes a JSON body with fields declares one
    const patchWithoutBody = app.routeTable.filter((r) => r.method === 'PATCH' && !r.body).map((r) => r.url);
    assert.deepEqual(patchWithoutBody, []);
  });

  it('function level: every admin route, called by a non-admin, is 403; by an inactive user 403; without a token 401', async () => {
    const adminRoutes = app.routeTable.filter((r) => r.auth === 'admin');
    assert.ok(adminRoutes.length >= 4, adminRoutes.map((r) => `${r.method} ${r.url}`).join(', '));
    const before = await snapshot(app);
    for (const r of adminRoutes) {
      const opts = { method: r.method as HTTPMethods, url: concrete(r.url), payload: BODY_METHODS.includes(r.method) ? {} : undefined };
      const asUser = await app.inject({ ...opts, headers: user.auth });
      assert.equal(asUser.statusCode, 403, `${r.method} ${r.url}: ${asUser.body}`);
      // a HEAD answer (of an admin GET route) has no body to read the code from
      if (r.method !== 'HEAD') assert.equal(errorBody(asUser).error_code, 'ADMIN_REQUIRED');
      const asInactive = await app.inject({ ...opts, headers: inactive.auth });
      assert.equal(asInactive.statusCode, 403, `${r.method} ${r.url} inactive`);
      const anonymous = await app.inject(opts);
      assert.equal(anonymous.statusCode, 401, `${r.method} ${r.url} anonymous`);
    }
    assert.equal(await snapshot(app), before);
  });

  it('function level: every method on every admin path, as a non-admin, is 403 or 404/405 — never 2xx', async () => {
    const paths = new Set(app.routeTable.filter((r) => r.auth === 'admin').map((r) => r.url));
    const before = await snapshot(app);
    for (const url of paths) {
      for (const method of ALL_METHODS) {
        const registered = app.routeTable.find((r) => r.url === url && r.method === method);
        if (registered && registered.auth !== 'admin') continue; // e.g. GET /users: any user may
        const res = await app.inject({ method, url: concrete(url), headers: user.auth, payload: BODY_METHODS.includes(method) ? {} : undefined });
        if (registered) assert.equal(res.statusCode, 403, `${method} ${url}`);
        else if (!registered) assert.ok([404, 405].includes(res.statusCode), `${method} ${url}: ${res.statusCode}`);
      }
    }
    assert.equal(await snapshot(app), before);
  });

  it('protected routes without a token are 401 and change nothing', async () => {
    const before = await snapshot(app);
    for (const r of app.routeTable.filter((x) => x.auth === 'user' || x.auth === 'admin')) {
      const res = await app.inject({ method: r.method as HTTPMethods, url: concrete(r.url), payload: BODY_METHODS.includes(r.method) ? {} : undefined });
      assert.equal(res.statusCode, 401, `${r.method} ${r.url}`);
      assert.equal(res.headers['www-authenticate'], 'Bearer');
    }
    assert.equal(await snapshot(app), before);
  });

  it('no response schema can carry a hash, a token id or an internal column; secrets only where documented', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json<{ paths: Record<string, Record<string, { responses?: Record<string, unknown> }>> }>();
    const FORBIDDEN = ['password', 'password_hash', 'deleted_at', 'jti', 'password_changed_at', 'revoked_at', 'raw_body', 'request_hash'];
    const SECRET_ALLOWED = ['post /api/v1/webhooks/subscriptions', 'post /api/v1/webhooks/subscriptions/{subscription_id}/rotate-secret'];
    // what a platform sent, shown to administrators (its signature header left out)
    const RAW_BODY_ALLOWED = ['get /api/v1/admin/inbound-webhooks/{id}'];
    const found: string[] = [];
    const walk = (schema: unknown, where: string) => {
      if (!schema || typeof schema !== 'object') return;
      for (const [k, v] of Object.entries(schema as Schema)) {
        if (k === 'properties' && v && typeof v === 'object') {
          for (const name of Object.keys(v)) {
            if (FORBIDDEN.includes(name) && !(name === 'raw_body' && RAW_BODY_ALLOWED.includes(where))) found.push(`${where}: ${name}`);
            if (name === 'secret' && !SECRET_ALLOWED.includes(where)) found.push(`${where}: secret`);
          }
        }
        walk(v, where);
      }
    };
    let responses = 0;
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        if (op.responses) responses++;
        walk(op.responses, `${method} ${path}`);
      }
    }
    assert.ok(responses > 20);
    assert.deepEqual(found, []);
  });
});
