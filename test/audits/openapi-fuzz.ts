import type { JobName } from '../../src/jobs/registry.ts';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fc from 'fast-check';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { sql } from 'kysely';
import { createUser, type TestUser } from '../helpers/app.ts';

/**
 * Property-based fuzzing of every operation of the service's own OpenAPI document (/openapi.json).
 * For each run fast-check picks an operation and generates its path parameters, query, headers,
 * credentials and body — from the operation's schemas (valid-ish values) mixed with hostile ones
 * (wrong types, huge and NUL-bearing strings, unicode, deep nesting, extreme numbers, malformed
 * JSON, odd content types). Every answer must hold:
 * - never a 5xx;
 * - every 4xx is the error shape {detail: string, error_code: string};
 * - a rejected request (4xx) leaves no trace: the content of every table and the job queue are
 *   byte-for-byte what they were before it.
 * The app must run with ROLE=api (no job workers), so nothing changes the database behind a request.
 */

type Schema = Record<string, unknown> & {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  format?: string;
  pattern?: string;
  multipleOf?: number;
  uniqueItems?: boolean;
};

interface OpenApiParameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema?: Schema;
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, { parameters?: OpenApiParameter[]; requestBody?: { content: Record<string, { schema: Schema }> }; security?: unknown[] }>>;
  components?: { schemas?: Record<string, Schema> };
}

export interface Operation {
  method: string;
  path: string;
  params: OpenApiParameter[];
  body: Schema | undefined;
  secured: boolean;
}

export interface FuzzRequest {
  op: Operation;
  url: string;
  headers: Record<string, string>;
  payload: string | undefined;
  auth: string;
}

export interface FuzzOptions {
  /** requests in all, each to an operation drawn at random */
  numRuns?: number;
  /**
   * instead of numRuns: this many requests to every operation, one after the other, so every
   * operation is exercised however slow the machine is
   */
  runsPerOperation?: number;
  /** stop (without failing) after this long */
  timeLimitMs?: number;
  seed?: number;
  /** the inbound webhook secret of the app, to sign some generated bodies correctly */
  webhookSecret?: string;
}

export interface FuzzReport {
  runs: number;
  operations: number;
  byStatus: Map<number, number>;
  byOperation: Map<string, Map<number, number>>;
  rejected: number;
  elapsedMs: number;
  seed: number;
}

const MIGRATION_TABLES = new Set(['kysely_migration', 'kysely_migration_lock']);

export function operationsOf(doc: OpenApiDocument): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const content = op.requestBody?.content ?? {};
      const body = content['application/json']?.schema;
      ops.push({ method: method.toUpperCase(), path, params: op.parameters ?? [], body, secured: (op.security?.length ?? 0) > 0 });
    }
  }
  return ops;
}

export function resolve(doc: OpenApiDocument, s: Schema): Schema {
  let cur = s;
  for (let i = 0; i < 10 && cur.$ref; i++) {
    const name = cur.$ref.split('/').pop()!;
    cur = doc.components?.schemas?.[name] ?? {};
  }
  return cur;
}

// ---------------------------------------------------------------- hostile values

const nested = (depth: number, kind: 'array' | 'object'): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = kind === 'array' ? [v] : { a: v };
  return v;
};

const HOSTILE_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\u202e\u0000evil',
  'null',
  'true',
  '0',
  '-1',
  '1e999',
  'NaN',
  '😀'.repeat(300),
  'ʕ•ᴥ•ʔ 𝕳𝖊𝖑𝖑𝖔 \u0301\u0301\u0301',
  '\ud800',
  "' OR 1=1; --",
  '"; DROP TABLE users; --',
  '<script>alert(1)</script>',
  '${jndi:ldap://x}',
  '../../../../etc/passwd',
  '%00%0d%0a',
  'http://127.0.0.1:1/',
  'a@b',
  'x'.repeat(600),
  'é'.repeat(5000),
  'x'.repeat(200_000),
];

const hostileNumber = fc.oneof(
  fc.constantFrom(0, -1, -0, 1.5, 0.001, 0.005, -2147483649, 2147483647, 2147483648, 9007199254740993, 1e21, 1e308, -1e308, 5e-324),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

export const hostile: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 2, arbitrary: hostileNumber },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, [], {}, [null], { '': '' }, { __proto__: { admin: true } }, { constructor: { prototype: { x: 1 } } }) },
  { weight: 1, arbitrary: fc.constantFrom(nested(64, 'array'), nested(64, 'object'), nested(2000, 'array')) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

// ---------------------------------------------------------------- schema-driven values

/** Values the document calls valid for `raw`: every keyword it states is met. */
export function validArb(doc: OpenApiDocument, raw: Schema, depth = 0): fc.Arbitrary<unknown> {
  const s = resolve(doc, raw);
  if (depth > 6) return fc.constant(null);
  if (s.const !== undefined) return fc.constant(s.const);
  if (s.enum) return fc.constantFrom(...s.enum);
  const alternatives = s.anyOf ?? s.oneOf;
  if (alternatives) return fc.oneof(...alternatives.map((a) => validArb(doc, a, depth + 1)));
  const type = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  if (type.length > 1) return fc.oneof(...type.map((t) => validArb(doc, { ...s, type: t }, depth + 1)));
  switch (type[0]) {
    case 'string': {
      const min = s.minLength ?? 0;
      const max = Math.max(min, Math.min(s.maxLength ?? 40, 60));
      if (s.format === 'email') return fc.tuple(fc.stringMatching(/^[a-z0-9]([a-z0-9+_-]{0,18}[a-z0-9])?$/), fc.stringMatching(/^[a-z0-9]{1,12}$/)).map(([l, d]) => `${l}@${d}.example`).filter((e) => e.length <= (s.maxLength ?? 320));
      const dates = fc.date({ noInvalidDate: true, min: new Date('1970-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z') });
      if (s.format === 'date-time') return dates.map((d) => d.toISOString());
      if (s.format === 'date') return dates.map((d) => d.toISOString().slice(0, 10));
      if (s.format === 'uri') return fc.webUrl({ withQueryParameters: true }).filter((u) => u.length <= (s.maxLength ?? 2048));
      // NonBlank's '\\S' is what the default generator's filter already ensures
      if (s.pattern && s.pattern !== '\\S') return fc.stringMatching(new RegExp(s.pattern)).filter((v) => v.length >= min && v.length <= (s.maxLength ?? 60));
      return fc.string({ minLength: Math.max(min, 1), maxLength: max }).filter((v) => v.trim().length > 0 || min === 0);
    }
    case 'integer': {
      const min = s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : -5);
      const max = s.maximum ?? (s.exclusiveMaximum !== undefined ? s.exclusiveMaximum - 1 : Math.max(min, 0) + 50);
      return fc.integer({ min: Math.max(min, -1e9), max: Math.min(max, 1e9) });
    }
    case 'number': {
      // in cents (c / 100 is the nearest double to the two-decimal value, a multiple of 0.01 as written)
      const minCents = s.minimum !== undefined ? Math.ceil(s.minimum * 100) : s.exclusiveMinimum !== undefined ? Math.floor(s.exclusiveMinimum * 100) + 1 : -100000;
      const maxCents = s.maximum !== undefined ? Math.floor(s.maximum * 100) : s.exclusiveMaximum !== undefined ? Math.ceil(s.exclusiveMaximum * 100) - 1 : 10000000;
      const limit = 0x7fffffff;
      return fc.integer({ min: Math.max(minCents, -limit), max: Math.min(maxCents, limit) }).map((c) => c / 100);
    }
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const items = s.items ? validArb(doc, s.items, depth + 1) : hostile;
      const length = { minLength: s.minItems ?? 0, maxLength: Math.min(s.maxItems ?? 4, 4) };
      return s.uniqueItems ? fc.uniqueArray(items, { ...length, selector: (v) => JSON.stringify(v) }) : fc.array(items, length);
    }
    case 'object':
    default: {
      if (!s.properties) return type[0] === 'object' ? fc.constant({}) : hostile;
      const props = Object.fromEntries(Object.entries(s.properties).map(([k, v]) => [k, validArb(doc, v, depth + 1)]));
      return fc.record(props, { requiredKeys: (s.required ?? []).filter((k) => k in props) });
    }
  }
}

/** Mostly schema-valid, with hostile values swapped in at any depth, keys dropped or added. */
function mixedArb(doc: OpenApiDocument, raw: Schema, depth = 0): fc.Arbitrary<unknown> {
  const s = resolve(doc, raw);
  if (depth > 5) return hostile;
  const type = Array.isArray(s.type) ? undefined : s.type;
  let inner: fc.Arbitrary<unknown>;
  if (type === 'object' && s.properties) {
    const props = Object.fromEntries(Object.entries(s.properties).map(([k, v]) => [k, mixedArb(doc, v, depth + 1)]));
    const required = (s.required ?? []).filter((k) => k in props);
    inner = fc
      .tuple(
        fc.oneof({ weight: 4, arbitrary: fc.record(props, { requiredKeys: required }) }, { weight: 1, arbitrary: fc.record(props, { requiredKeys: [] }) }),
        fc.option(fc.dictionary(fc.string({ maxLength: 12 }), hostile, { maxKeys: 2 }), { freq: 5 }),
      )
      .map(([obj, extra]) => (extra ? { ...extra, ...(obj as object) } : obj));
  } else if (type === 'array' && s.items) {
    inner = fc.array(mixedArb(doc, s.items, depth + 1), { minLength: 0, maxLength: Math.min((s.maxItems ?? 4) + 1, 6) });
  } else {
    inner = validArb(doc, s, depth);
  }
  return fc.oneof({ weight: 5, arbitrary: inner }, { weight: 1, arbitrary: hostile });
}

// ---------------------------------------------------------------- requests

const MALFORMED_BODIES = ['{', '{"a":', '[1,2', 'nul', '\u0000', '{"items": [}', '{"a":1}{"b":2}', '\ufeff{}', '{"__proto__": {"x": 1}}', ''];
const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'application/xml',
  'application/json; charset=latin1',
  '',
];

const headerSafe = fc.oneof(
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 300 }),
  fc.constantFrom('', ' ', 'x'.repeat(10_000), '\t', 'null', '-1', '0', 'ÿÿÿ'),
);

const HOSTILE_PATH = ['0', '-1', 'abc', '1.5', '99999999999999999999', '2147483648', ' 1', '1e3', '0x10', '%00', 'null', '😀', '..', '1;DROP', '', '1,2'];
/** Sent as they are (not percent-encoded again): malformed or unusual escapes. */
const RAW_URL_PARTS = new Set(['%', '%zz', '%ED%A0%80', '%C0%AF', '%2e%2e%2f', '%00', '1%0a2']);

/** Percent-encodes (lone surrogates made well-formed first), except the deliberate raw parts. */
function enc(v: string): string {
  return RAW_URL_PARTS.has(v) ? v : encodeURIComponent(v.toWellFormed());
}

export interface Fixtures {
  user: TestUser;
  admin: TestUser;
  /** valid-looking ids per path parameter name */
  ids: Record<string, number[]>;
  /** a refresh token (a token of the wrong type for bearer use) */
  refreshToken: string;
}

function urlEncodeForm(value: unknown): string {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return String(value);
  const pairs: [string, string][] = Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, typeof v === 'string' ? v : String(JSON.stringify(v))]);
  return new URLSearchParams(pairs).toString();
}

function requestArb(doc: OpenApiDocument, op: Operation, fx: Fixtures, secret: string | undefined): fc.Arbitrary<FuzzRequest> {
  const pathParams = op.params.filter((p) => p.in === 'path');
  const queryParams = op.params.filter((p) => p.in === 'query');
  const headerParams = op.params.filter((p) => p.in === 'header');

  const pathArb = fc.record(
    Object.fromEntries(
      pathParams.map((p) => [
        p.name,
        fc.oneof(
          { weight: 4, arbitrary: fc.constantFrom(...(fx.ids[p.name]?.length ? fx.ids[p.name] : [1])).map(String) },
          { weight: 1, arbitrary: fc.integer({ min: 1, max: 50 }).map(String) },
          { weight: 2, arbitrary: fc.constantFrom(...HOSTILE_PATH, ...RAW_URL_PARTS) },
          { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 30 }) },
        ),
      ]),
    ),
  ) as fc.Arbitrary<Record<string, string>>;

  const queryArb = fc
    .tuple(
      fc.record(
        Object.fromEntries(
          queryParams.map((p) => [
            p.name,
            fc.option(
              fc.oneof(
                { weight: 3, arbitrary: validArb(doc, p.schema ?? {}).map((v) => [String(v)]) },
                { weight: 1, arbitrary: hostile.map((v) => [typeof v === 'string' ? v : JSON.stringify(v) ?? 'undefined']) },
                { weight: 1, arbitrary: fc.tuple(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 })).map(([a, b]) => [a, b]) },
                { weight: 1, arbitrary: fc.constantFrom(...RAW_URL_PARTS).map((v) => [v]) },
              ),
              { freq: 3 },
            ),
          ]),
        ),
      ) as fc.Arbitrary<Record<string, string[] | null>>,
      fc.option(fc.tuple(fc.string({ maxLength: 10 }), fc.string({ maxLength: 10 })), { freq: 6 }),
    )
    .map(([known, extra]) => {
      const parts: string[] = [];
      for (const [k, values] of Object.entries(known)) for (const v of values ?? []) parts.push(`${enc(k)}=${enc(v)}`);
      if (extra) parts.push(`${enc(extra[0])}=${enc(extra[1])}`);
      return parts.length ? `?${parts.join('&')}` : '';
    });

  const headerArb = fc.record(
    Object.fromEntries(headerParams.map((p) => [p.name, fc.option(fc.oneof(validArb(doc, p.schema ?? {}).map(String), headerSafe), { freq: 3 })])),
  ) as fc.Arbitrary<Record<string, string | null>>;

  const authArb = fc.constantFrom('user', 'user', 'user', 'admin', 'admin', 'admin', 'none', 'garbage', 'refresh', 'basic', 'bearer-empty');
  const bodyArb: fc.Arbitrary<{ kind: 'json' | 'raw' | 'none'; value: unknown }> = op.body
    ? fc.oneof(
        { weight: 4, arbitrary: validArb(doc, op.body).map((value) => ({ kind: 'json' as const, value })) },
        { weight: 6, arbitrary: mixedArb(doc, op.body).map((value) => ({ kind: 'json' as const, value })) },
        { weight: 1, arbitrary: fc.constantFrom(...MALFORMED_BODIES).map((value) => ({ kind: 'raw' as const, value })) },
        { weight: 1, arbitrary: fc.constant({ kind: 'none' as const, value: undefined }) },
      )
    : fc.oneof(
        { weight: 4, arbitrary: fc.constant({ kind: 'none' as const, value: undefined }) },
        { weight: 2, arbitrary: hostile.map((value) => ({ kind: 'json' as const, value })) },
        { weight: 1, arbitrary: fc.constantFrom(...MALFORMED_BODIES).map((value) => ({ kind: 'raw' as const, value })) },
      );
  const contentTypeArb = fc.oneof({ weight: 8, arbitrary: fc.constant('application/json') }, { weight: 2, arbitrary: fc.constantFrom(...CONTENT_TYPES) });
  const signatureArb = fc.constantFrom('valid', 'valid', 'invalid', 'missing');

  return fc
    .record({ path: pathArb, query: queryArb, headers: headerArb, auth: authArb, body: bodyArb, contentType: contentTypeArb, signature: signatureArb, requestId: fc.option(headerSafe, { freq: 4 }) })
    .map((g) => {
      const url = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => enc(g.path[name] ?? '1')) + g.query;
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(g.headers)) if (v !== null) headers[k] = v;
      if (g.requestId !== null) headers['x-request-id'] = g.requestId;
      const tokens: Record<string, string | undefined> = {
        none: undefined,
        user: `Bearer ${fx.user.token}`,
        admin: `Bearer ${fx.admin.token}`,
        garbage: 'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.',
        refresh: `Bearer ${fx.refreshToken}`,
        basic: 'Basic dXNlcjpwYXNz',
        'bearer-empty': 'Bearer ',
      };
      if (tokens[g.auth]) headers.authorization = tokens[g.auth]!;
      let payload: string | undefined;
      if (g.body.kind === 'json') {
        payload = g.contentType === 'application/x-www-form-urlencoded' ? urlEncodeForm(g.body.value) : (JSON.stringify(g.body.value) ?? 'null');
        if (g.contentType) headers['content-type'] = g.contentType;
      } else if (g.body.kind === 'raw') {
        payload = g.body.value as string;
        if (g.contentType) headers['content-type'] = g.contentType;
      }
      if (op.path.endsWith('/webhooks/orders/create') && secret) {
        if (g.signature === 'valid') headers['x-shopify-hmac-sha256'] = crypto.createHmac('sha256', secret).update(payload ?? '').digest('base64');
        else if (g.signature === 'missing') delete headers['x-shopify-hmac-sha256'];
      }
      return { op, url, headers, payload, auth: g.auth };
    });
}

// ---------------------------------------------------------------- state

/**
 * Every public table's content (hashed) and the number of jobs pg-boss keeps, in one query. The
 * jobs are counted by a read of pg-boss's table, in this test only: its API reads one queue at a time
 * (findJobs), which for the thirty-odd queues before and after each request made the run three times
 * as long (48 s → 138 s for 530 requests on PGlite).
 */
async function fingerprint(app: FastifyInstance, tables: string[]): Promise<string> {
  const parts = tables.map((t) => `SELECT '${t}' AS t, md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) AS h FROM "${t}" x`);
  parts.push(`SELECT 'pgboss.job' AS t, count(*)::text AS h FROM pgboss.job`);
  const res = await sql<{ t: string; h: string }>`${sql.raw(parts.join(' UNION ALL '))}`.execute(app.ctx.db);
  return res.rows.map((r) => `${r.t}=${r.h}`).join(' ');
}

async function publicTables(app: FastifyInstance): Promise<string[]> {
  const res = await sql<{ table_name: string }>`
    SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name
  `.execute(app.ctx.db);
  return res.rows.map((r) => r.table_name).filter((t) => !MIGRATION_TABLES.has(t));
}

/**
 * pg-boss looks a queue up (outside the caller's transaction) the first time a process sends to it
 * without working it. On embedded PGlite that lookup waits for the transaction's own lock, so an
 * API-only app on PGlite (a combination only tests use) would wait forever: one job sent outside any
 * transaction per queue fills pg-boss's cache first. The jobs are never worked (no workers here).
 */
async function warmQueueCache(app: FastifyInstance): Promise<void> {
  const queues = (await app.ctx.queue.boss.getQueues()).map((q) => q.name);
  // a payload no handler would accept: these jobs exist only to fill the cache
  for (const name of queues) await app.ctx.queue.sendNow(name as JobName, { warmup: true } as never);
}

/** Users, products, items, orders and subscriptions for the path parameters to point at. */
export async function createFixtures(app: FastifyInstance): Promise<Fixtures> {
  // victims first (low ids, which random small integers hit too); the principals are restored before every run
  const victims: number[] = [];
  for (let i = 0; i < 4; i++) victims.push((await createUser(app)).user.id);
  const admin = await createUser(app, { admin: true });
  const user = await createUser(app);
  const products: number[] = [];
  for (let i = 0; i < 3; i++) {
    const p = await app.ctx.db
      .insertInto('products')
      .values({ sku: `FUZZ-${i}-${crypto.randomBytes(3).toString('hex')}`, name: `Fuzz product ${i}`, price: '4.20', stock: 100, is_active: true })
      .returning('id')
      .executeTakeFirstOrThrow();
    products.push(p.id);
  }
  const auth = { authorization: `Bearer ${user.token}` };
  const items: number[] = [];
  const orders: number[] = [];
  for (let i = 0; i < 3; i++) {
    const item = await app.inject({ method: 'POST', url: '/api/v1/items', headers: auth, payload: { name: `fuzz item ${i}`, price: 1.5 } });
    assert.equal(item.statusCode, 201, `fixture item: ${item.body}`);
    items.push(item.json<{ id: number }>().id);
    const order = await app.inject({ method: 'POST', url: '/api/v1/orders', headers: auth, payload: { items: [{ product_id: products[i], quantity: 1 }], shipping_address: 'Fuzz Lane 1' } });
    assert.equal(order.statusCode, 201, `fixture order: ${order.body}`);
    orders.push(order.json<{ id: number }>().id);
  }
  const subs: number[] = [];
  const sub = await app.inject({
    method: 'POST',
    url: '/api/v1/webhooks/subscriptions',
    headers: auth,
    payload: { url: 'http://127.0.0.1:9/hook', events: ['order.status_changed'] },
  });
  assert.equal(sub.statusCode, 201, `fixture subscription: ${sub.body}`);
  subs.push(sub.json<{ id: number }>().id);
  return {
    user,
    admin,
    refreshToken: user.refreshToken,
    ids: { user_id: [...victims, 999999], product_id: [...products, 999999], item_id: [...items, 999999], order_id: [...orders, 999999], subscription_id: [...subs, 999999] },
  };
}

export async function restorePrincipals(app: FastifyInstance, fx: Fixtures): Promise<void> {
  const ids = [fx.user.user.id, fx.admin.user.id];
  await app.ctx.db.updateTable('users').set({ is_active: true, deleted_at: null, password_changed_at: null, sessions_valid_after: null }).where('id', 'in', ids).execute();
  await app.ctx.db.updateTable('users').set({ is_admin: true }).where('id', '=', fx.admin.user.id).execute();
  await app.ctx.db.updateTable('users').set({ is_admin: false }).where('id', '=', fx.user.user.id).execute();
  await app.ctx.userCache.settle(); // the change reaches the user cache through its NOTIFY
}

function describeRequest(r: FuzzRequest): string {
  const headers = { ...r.headers };
  if (headers.authorization) headers.authorization = `<${r.auth}>`;
  const body = r.payload === undefined ? '(none)' : r.payload.length > 300 ? `${r.payload.slice(0, 300)}… (${r.payload.length} chars)` : r.payload;
  return `${r.op.method} ${r.url.slice(0, 300)}\nheaders: ${JSON.stringify(headers).slice(0, 500)}\nbody: ${body}`;
}

/** Runs the fuzzer against `app` (built with ROLE=api); throws on the first broken invariant. */
export async function fuzzOpenApi(app: FastifyInstance, opts: FuzzOptions): Promise<FuzzReport> {
  const docRes = await app.inject({ method: 'GET', url: '/openapi.json' });
  if (docRes.statusCode !== 200) throw new Error(`/openapi.json: ${docRes.statusCode}`);
  const doc = docRes.json<OpenApiDocument>();
  const ops = operationsOf(doc);
  await warmQueueCache(app);
  const fx = await createFixtures(app);
  const tables = await publicTables(app);
  const seed = opts.seed ?? Date.now() ^ (Math.random() * 0x7fffffff);
  const report: FuzzReport = { runs: 0, operations: ops.length, byStatus: new Map(), byOperation: new Map(), rejected: 0, elapsedMs: 0, seed };
  const started = Date.now();
  const property = (arb: fc.Arbitrary<FuzzRequest>) =>
    fc.asyncProperty(arb, async (req) => {
      await restorePrincipals(app, fx);
      const before = await fingerprint(app, tables);
      const res = await app.inject({ method: req.op.method, url: req.url, headers: req.headers, payload: req.payload } as InjectOptions);
      if (process.env.FUZZ_TRACE) process.stderr.write(`[fuzz] ${res.statusCode} ${describeRequest(req).replace(/\n/g, ' | ').slice(0, 400)} → ${res.body.slice(0, 120)}\n`);
      report.runs++;
      report.byStatus.set(res.statusCode, (report.byStatus.get(res.statusCode) ?? 0) + 1);
      const key = `${req.op.method} ${req.op.path}`;
      if (!report.byOperation.has(key)) report.byOperation.set(key, new Map());
      const perOp = report.byOperation.get(key)!;
      perOp.set(res.statusCode, (perOp.get(res.statusCode) ?? 0) + 1);
      const context = () => `\n${describeRequest(req)}\n→ ${res.statusCode} ${res.body.slice(0, 500)}`;
      if (res.statusCode >= 500) throw new Error(`5xx answer${context()}`);
      if (res.statusCode >= 400) {
        report.rejected++;
        let body: { detail?: unknown; error_code?: unknown } | undefined;
        try {
          body = res.json();
        } catch {
          body = undefined;
        }
        if (typeof body?.detail !== 'string' || typeof body?.error_code !== 'string') throw new Error(`4xx without {detail, error_code}${context()}`);
        const after = await fingerprint(app, tables);
        if (after !== before) {
          const changed = after.split(' ').filter((part) => !before.split(' ').includes(part));
          throw new Error(`a rejected request changed stored state (${changed.join(', ')})${context()}`);
        }
      }
    });
  const settings = { seed, interruptAfterTimeLimit: opts.timeLimitMs, markInterruptAsFailure: false, endOnFailure: true };
  if (opts.runsPerOperation !== undefined) {
    for (const op of ops) await fc.assert(property(requestArb(doc, op, fx, opts.webhookSecret)), { ...settings, numRuns: opts.runsPerOperation });
  } else {
    await fc.assert(property(fc.oneof(...ops.map((op) => requestArb(doc, op, fx, opts.webhookSecret)))), { ...settings, numRuns: opts.numRuns });
  }
  report.elapsedMs = Date.now() - started;
  return report;
}

/** The report as a table (stderr), for the test's output. */
export function printFuzzReport(title: string, r: FuzzReport): void {
  const statuses = [...r.byStatus.entries()].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}×${n}`).join(' ');
  const rows: [string, string][] = [
    ['seed', String(r.seed)],
    ['operations in /openapi.json', String(r.operations)],
    ['operations exercised', String(r.byOperation.size)],
    ['requests', String(r.runs)],
    ['elapsed (s)', (r.elapsedMs / 1000).toFixed(1)],
    ['statuses', statuses],
    ['rejected (4xx) with state checked', String(r.rejected)],
  ];
  for (const [op, m] of [...r.byOperation.entries()].sort()) {
    rows.push([`  ${op}`, [...m.entries()].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}×${n}`).join(' ')]);
  }
  const w = Math.max(...rows.map(([k]) => k.length));
  process.stderr.write(`\n${title}\n${rows.map(([k, v]) => `| ${k.padEnd(w)} | ${v}`).join('\n')}\n`);
}
