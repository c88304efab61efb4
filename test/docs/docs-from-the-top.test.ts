import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { NEEDS_FIRST, NOTED_OPERATIONS, THEN } from '../../src/http/openapi-try-it.ts';
import { mapShopifyCancellation, mapShopifyOrder } from '../../src/modules/inbound-webhooks/shopify-order.ts';
import { bootstrapAdmin } from '../../src/modules/users/admin-bootstrap.ts';
import { buildTestApp } from '../helpers/app.ts';
import { pageOrder, type Doc, type DocOperation, type Listed } from '../helpers/docs-order.ts';

// The docs pages' promise: on a fresh `npm start`, running the operations from the top with their
// examples works, except where an operation's description says what it needs first.

const VERSIONS = [
  { version: 'v1', address: '/openapi.json', prefix: '/api/v1' },
  { version: 'v2', address: '/openapi-v2.json', prefix: '/api/v2' },
] as const;

/** The administrator a fresh start creates (npm start prints a random password; the test chooses one). */
const ADMIN = { email: 'admin@example.com', password: 'printed-at-start-up' };

/** A fresh start: the demo catalogue, and the administrator created at start-up as server.ts does. */
async function freshStart(t: Parameters<typeof buildTestApp>[0]): Promise<FastifyInstance> {
  // deliveries to the subscription example's host fail at once, without a network
  const app = await buildTestApp(
    t,
    { seedDemoCatalog: true, adminEmail: ADMIN.email, adminPassword: ADMIN.password },
    { webhookResolver: (_host, callback) => callback(new Error('no network in tests'), []) },
  );
  await bootstrapAdmin(app.ctx);
  return app;
}

/** The paragraph of `description` that starts with `mark`, without it. */
function note(op: DocOperation, mark: string): string | undefined {
  const paragraph = (op.description ?? '').split('\n\n').find((p) => p.startsWith(mark));
  return paragraph?.slice(mark.length).trim();
}

/** What Try it out sends: the examples (or defaults) of the parameters and the body, and the page's token. */
function requestOf({ method, path, op }: Listed, token: string): InjectOptions {
  const params = op.parameters ?? [];
  const value = (p: { example?: unknown; schema?: { default?: unknown } }) => p.example ?? p.schema?.default;
  const url = path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(value(params.find((p) => p.in === 'path' && p.name === name)!))));
  const query = new URLSearchParams(params.filter((p) => p.in === 'query' && value(p) !== undefined).map((p): [string, string] => [p.name, String(value(p))]));
  const headers: Record<string, string> = Object.fromEntries(params.filter((p) => p.in === 'header' && p.example !== undefined).map((p) => [p.name, String(p.example)]));
  if (op.security?.length) headers.authorization = `Bearer ${token}`;
  const body = op.requestBody?.content['application/json']?.example;
  if (body !== undefined) headers['content-type'] = 'application/json';
  return { method: method.toUpperCase() as InjectOptions['method'], url: `${url}${query.size ? `?${query}` : ''}`, headers, payload: body === undefined ? undefined : JSON.stringify(body) };
}

/** What Authorize does: sign in with the e-mail and password, keep the access token. */
async function authorize(app: FastifyInstance, prefix: string): Promise<string> {
  const res = await app.inject({ method: 'POST', url: `${prefix}/auth/login`, payload: { username: ADMIN.email, password: ADMIN.password } });
  assert.equal(res.statusCode, 200, res.body);
  return res.json<{ access_token: string }>().access_token;
}

const successOf = (op: DocOperation) => Object.keys(op.responses).filter((s) => /^2\d\d$/.test(s)).sort()[0];
const streams = (op: DocOperation) => Object.values(op.responses).some((r) => r.content?.['text/event-stream'] !== undefined);

for (const { version, address, prefix } of VERSIONS) {
  describe(`${address} run from the top on a fresh start`, { timeout: 240000 }, () => {
    it("answers each operation's documented success status, except those whose description says what they need first", async (t) => {
      const app = await freshStart(t);
      const doc = (await app.inject({ method: 'GET', url: address })).json<Doc>();
      let token = await authorize(app, prefix);
      const failures: string[] = [];
      const notRun: string[] = [];
      let succeeded = 0;
      for (const listed of pageOrder(doc)) {
        const { method, path, op } = listed;
        const key = `${method.toUpperCase()} ${path}`;
        if (streams(op)) {
          // a stream answers only when it ends: its example is for a client that reads it as it comes
          notRun.push(`${key}: streams text/event-stream`);
          continue;
        }
        const res = await app.inject(requestOf(listed, token));
        const needs = note(op, NEEDS_FIRST);
        if (needs === undefined) {
          if (String(res.statusCode) !== successOf(op)) failures.push(`${key}: ${res.statusCode} (documented ${successOf(op)}) ${res.body.slice(0, 200)}`);
          else succeeded++;
        } else {
          notRun.push(`${key}: needs first ${needs}`);
          // without what it needs, it answers one of its documented errors
          const code = res.statusCode >= 400 ? res.json<{ error_code?: string }>().error_code : undefined;
          const listedCodes = Object.keys(op.responses[String(res.statusCode)]?.content?.['application/json']?.examples ?? {});
          if (code === undefined || !listedCodes.includes(code)) failures.push(`${key} (needs ${needs}): ${res.statusCode} ${res.body.slice(0, 200)}, not a documented error`);
        }
        // the page signs in again where the description says so
        if (note(op, THEN) !== undefined) token = await authorize(app, prefix);
      }
      for (const line of notRun) t.diagnostic(`not expected to succeed as it stands: ${line}`);
      assert.deepEqual(failures, []);
      assert.ok(succeeded > 30, `${succeeded} operations succeeded`);

      // the examples act on the rows the ones above them made: the administrator (user 1) ordered the
      // demo catalogue's first product, and (v2) cancelled that order
      const order = await app.ctx.db.selectFrom('orders').select(['id', 'status', 'user_id']).where('id', '=', 1).executeTakeFirstOrThrow();
      assert.equal(order.user_id, 1);
      if (version === 'v2') assert.equal(order.status, 'cancelled');
    });

    it('lists each deletion after every operation on what it deletes, and notes only operations it has', async (t) => {
      const app = await buildTestApp(t);
      const doc = (await app.inject({ method: 'GET', url: address })).json<Doc>();
      const order = pageOrder(doc);
      const deletions = order.filter((o) => o.method === 'delete');
      assert.ok(deletions.length >= 3, 'users, items and subscriptions are deleted');
      for (const deletion of deletions) {
        const at = order.indexOf(deletion);
        const after = order.slice(at + 1).filter((o) => o.path === deletion.path || o.path.startsWith(`${deletion.path}/`));
        assert.deepEqual(after.map((o) => `${o.method.toUpperCase()} ${o.path}`), [], `nothing on what DELETE ${deletion.path} deletes comes after it`);
      }
      const subscription = order.findIndex((o) => o.method === 'delete' && o.path.endsWith('/webhooks/subscriptions/{subscription_id}'));
      const using = order.filter((o, i) => i !== subscription && o.path.startsWith(`${prefix}/webhooks/subscriptions/{subscription_id}`));
      assert.ok(using.length >= 6 && using.every((o) => order.indexOf(o) < subscription), 'the subscription is deleted after the routes that need it');

      // every operation a note names exists in one of the versions (a renamed route leaves none behind)
      const other = (await app.inject({ method: 'GET', url: VERSIONS.find((v) => v.address !== address)!.address })).json<Doc>();
      const known = new Set(
        [doc, other].flatMap((d) => Object.entries(d.paths).flatMap(([path, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path.replace(/^\/api\/v\d/, '')}`))),
      );
      assert.deepEqual(NOTED_OPERATIONS.filter((k) => !known.has(k)), []);
    });

    it("documents the platform webhooks' payloads: what processing requires, and examples it accepts", async (t) => {
      const app = await buildTestApp(t);
      const doc = (await app.inject({ method: 'GET', url: address })).json<Doc>();
      interface BodySchema {
        required?: string[];
        properties: Record<string, { description?: string; items?: BodySchema }>;
      }
      const body = (topic: string) => {
        const media = doc.paths[`${prefix}/webhooks/orders/${topic}`].post.requestBody?.content['application/json'] as { schema: BodySchema; example: unknown };
        return { schema: media.schema, example: media.example };
      };
      const order = body('create');
      assert.deepEqual(order.schema.required, ['id', 'line_items']);
      assert.deepEqual(order.schema.properties.line_items.items?.required, ['quantity']);
      assert.match(order.schema.properties.line_items.description ?? '', /`sku` \(required/);
      assert.match(order.schema.properties.email.description ?? '', /required/);
      const mapped = await mapShopifyOrder(order.example);
      assert.deepEqual(mapped.lines, [{ sku: 'DEMO-MUG', quantity: 2 }, { sku: 'DEMO-TSHIRT', quantity: 1 }], 'the example orders demo products');
      const cancellation = body('cancelled');
      assert.deepEqual(cancellation.schema.required, ['id']);
      assert.equal((await mapShopifyCancellation(cancellation.example)).externalId, mapped.externalId, 'the example cancels the example order');
    });
  });
}
