import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { InjectOptions } from 'fastify';
import { buildTestApp, createUser } from '../helpers/app.ts';

interface Parameter {
  in: string;
  name: string;
  required?: boolean;
  example?: unknown;
  schema?: { default?: unknown };
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, { example?: unknown }> };
  security?: unknown[];
  responses: Record<string, { content?: Record<string, { examples?: Record<string, unknown> }> }>;
}
interface Doc {
  paths: Record<string, Record<string, Operation>>;
}

/**
 * The operations whose examples cannot succeed as they stand, what they answer instead, and why: a
 * secret of the caller's (a password, a token), or a row a fresh start does not have.
 */
const CANNOT_SUCCEED: Record<string, { status: number; code: string; why: string }> = {
  'POST /auth/login': { status: 401, code: 'INVALID_CREDENTIALS', why: "the administrator's password is printed at start-up" },
  'POST /auth/refresh': { status: 401, code: 'INVALID_TOKEN', why: 'a refresh token comes from a sign-in' },
  'POST /auth/logout': { status: 401, code: 'INVALID_TOKEN', why: 'a refresh token comes from a sign-in' },
  'POST /auth/password': { status: 401, code: 'INVALID_CREDENTIALS', why: 'the current password is your own' },
  'POST /auth/reset-password': { status: 400, code: 'INVALID_RESET_TOKEN', why: 'the token comes in the recovery e-mail' },
  'POST /auth/verify-email': { status: 400, code: 'INVALID_EMAIL_TOKEN', why: 'the token comes in the confirmation e-mail' },
  'POST /auth/email-change/revert': { status: 400, code: 'INVALID_EMAIL_TOKEN', why: 'the token comes in the notice to the previous address' },
  'POST /orders/{order_id}/retry': { status: 400, code: 'INVALID_STATE', why: 'only a failed order is retried' },
  'GET /webhooks/subscriptions/{subscription_id}/messages/{message_id}': { status: 404, code: 'NOT_FOUND', why: 'a message id comes from the deliveries' },
  'POST /webhooks/subscriptions/{subscription_id}/messages/{message_id}/resend': { status: 404, code: 'NOT_FOUND', why: 'a message id comes from the deliveries' },
  'GET /admin/inbound-webhooks/{id}': { status: 404, code: 'NOT_FOUND', why: 'a fresh start has received no platform webhook' },
  'POST /admin/inbound-webhooks/{id}/reprocess': { status: 404, code: 'NOT_FOUND', why: 'a fresh start has received no platform webhook' },
};

/** Run after everything else, in this order: deletions, then signing out everywhere (which ends the session). */
const LAST = ['delete', 'POST /auth/logout-all'];

function requestOf(method: string, path: string, op: Operation, token: string): InjectOptions {
  const params = op.parameters ?? [];
  const value = (p: Parameter) => p.example ?? p.schema?.default;
  const url = path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(value(params.find((p) => p.in === 'path' && p.name === name)!))));
  const query = new URLSearchParams(params.filter((p) => p.in === 'query' && value(p) !== undefined).map((p): [string, string] => [p.name, String(value(p))]));
  const headers: Record<string, string> = Object.fromEntries(params.filter((p) => p.in === 'header' && p.example !== undefined).map((p) => [p.name, String(p.example)]));
  if (op.security?.length) headers.authorization = `Bearer ${token}`;
  const body = op.requestBody?.content['application/json']?.example;
  if (body !== undefined) headers['content-type'] = 'application/json';
  return { method: method.toUpperCase() as InjectOptions['method'], url: `${url}${query.size ? `?${query}` : ''}`, headers, payload: body === undefined ? undefined : JSON.stringify(body) };
}

// What Try it out sends on a fresh start with the demo catalogue, signed in as its administrator
// (user 1): every operation in the order of the page (deletions and signing out at the end), with
// the document's examples and defaults only. Each succeeds, or is one of CANNOT_SUCCEED and
// answers what that names, a code its own response lists.
for (const [version, address] of [['v1', '/openapi.json'], ['v2', '/openapi-v2.json']] as const) {
  describe(`the examples of ${address}`, { timeout: 240000 }, () => {
    it('succeed as they stand on a fresh start, run from the top', async (t) => {
      // deliveries to the subscription example's host fail at once, without a network
      const app = await buildTestApp(t, { seedDemoCatalog: true }, { webhookResolver: (_host, callback) => callback(new Error('no network in tests'), []) });
      const admin = await createUser(app, { admin: true, email: 'admin@example.com' });
      assert.equal(admin.user.id, 1, 'the administrator of a fresh start is user 1');
      const doc = (await app.inject({ method: 'GET', url: address })).json<Doc>();
      const prefix = `/api/${version}`;
      const operations = Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ method, path, op })));
      const rank = (o: { method: string; path: string }) => {
        const key = `${o.method.toUpperCase()} ${o.path.replace(prefix, '')}`;
        return LAST.indexOf(key) >= 0 ? LAST.indexOf(key) + 1 : o.method === 'delete' ? 1 : 0;
      };
      const ordered = [...operations].sort((a, b) => rank(a) - rank(b));
      const failures: string[] = [];
      let ran = 0;
      for (const { method, path, op } of ordered) {
        const key = `${method.toUpperCase()} ${path.replace(prefix, '')}`;
        // the platform's webhooks are signed with a secret a fresh start does not have
        if (path.includes('/webhooks/orders/')) continue;
        // a stream answers only when it ends (GET /events: test/modules/live/events.test.ts)
        if (Object.values(op.responses).some((r) => r.content?.['text/event-stream'])) continue;
        const res = await app.inject(requestOf(method, path, op, admin.token));
        ran++;
        const expected = CANNOT_SUCCEED[key];
        if (!expected) {
          if (res.statusCode >= 300) failures.push(`${key}: ${res.statusCode} ${res.body.slice(0, 200)}`);
          continue;
        }
        const code = res.statusCode >= 400 ? res.json<{ error_code: string }>().error_code : undefined;
        if (res.statusCode !== expected.status || code !== expected.code) failures.push(`${key}: ${res.statusCode} ${res.body.slice(0, 200)} (expected ${expected.status} ${expected.code}: ${expected.why})`);
        const listed = Object.keys(op.responses[String(expected.status)]?.content?.['application/json']?.examples ?? {});
        assert.ok(listed.includes(expected.code), `${key} lists ${expected.code} under ${expected.status}: ${listed.join(', ')}`);
      }
      assert.deepEqual(failures, []);
      assert.ok(ran > 40, `${ran} operations run`);
      // the order the example placed is the first product's, and (v2) cancelled by the cancel example
      const order = await app.ctx.db.selectFrom('orders').select(['id', 'status', 'user_id']).where('id', '=', 1).executeTakeFirstOrThrow();
      assert.equal(order.user_id, 1);
      if (version === 'v2') assert.equal(order.status, 'cancelled');
    });
  });
}
