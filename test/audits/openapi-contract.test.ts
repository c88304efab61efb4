import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { InjectOptions } from 'fastify';
import { buildTestApp } from '../helpers/app.ts';
import { createFixtures, operationsOf, resolve, restorePrincipals, validArb, type OpenApiDocument, type Operation } from './openapi-fuzz.ts';

/**
 * The document against the service, both ways (fast-check): a request the document calls valid is
 * never refused for its shape (a 422 may only come from a documented business rule: an unsafe
 * subscription URL, a reused idempotency key, a date range the wrong way round), and a request
 * without something the document calls required is always refused.
 */
const SCHEMA_KEYWORDS = new Set([
  'type', 'required', 'missing', 'extra_forbidden', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'minLength', 'maxLength',
  'pattern', 'format', 'enum', 'const', 'multipleOf', 'minItems', 'maxItems', 'uniqueItems', 'anyOf', 'oneOf', 'json_invalid',
]);

interface Generated {
  op: Operation;
  url: string;
  query: Record<string, string>;
  body: Record<string, unknown> | undefined;
}

function validRequest(doc: OpenApiDocument, op: Operation, ids: Record<string, number[]>): fc.Arbitrary<Generated> {
  const query = op.params.filter((p) => p.in === 'query');
  const queryArb = fc.record(
    Object.fromEntries(query.map((p) => [p.name, validArb(doc, p.schema ?? {}).map((v) => String(v))])),
    { requiredKeys: query.filter((p) => p.required).map((p) => p.name) },
  ) as fc.Arbitrary<Record<string, string>>;
  const bodyArb = op.body ? (validArb(doc, op.body) as fc.Arbitrary<Record<string, unknown>>) : fc.constant(undefined);
  // an existing row's id where the fixtures have one, else any value the document allows
  const pathArb = fc.record(
    Object.fromEntries(
      op.params.filter((p) => p.in === 'path').map((p) => [p.name, ids[p.name]?.length ? fc.constant(String(ids[p.name][0])) : validArb(doc, p.schema ?? {}).map(String)]),
    ),
  ) as fc.Arbitrary<Record<string, string>>;
  return fc.record({ path: pathArb, query: queryArb, body: bodyArb }).map(({ path, query: q, body }) => ({
    op,
    url: op.path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(path[name] ?? '1')),
    query: q,
    body,
  }));
}

describe('the OpenAPI document and the service agree', () => {
  it('valid per the document is never a schema 422; missing a required part is always refused', async (t) => {
    const app = await buildTestApp(t, { role: 'api' });
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json<OpenApiDocument>();
    const fx = await createFixtures(app);
    // the platform webhooks are signed over their raw body and have no body schema to hold it to
    const ops = operationsOf(doc).filter((op) => !op.path.includes('/webhooks/orders/'));
    const send = (g: Generated, body: unknown) => {
      const search = new URLSearchParams(g.query).toString();
      return app.inject({
        method: g.op.method,
        url: `${g.url}${search ? `?${search}` : ''}`,
        headers: { authorization: `Bearer ${fx.admin.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        payload: body === undefined ? undefined : JSON.stringify(body),
      } as InjectOptions);
    };
    const seen = new Set<string>();
    let refusedMissing = 0;

    await fc.assert(
      fc.asyncProperty(fc.oneof(...ops.map((op) => validRequest(doc, op, fx.ids))), async (g) => {
        await restorePrincipals(app, fx);
        seen.add(`${g.op.method} ${g.op.path}`);
        const res = await send(g, g.body);
        const context = `${g.op.method} ${g.url} ${JSON.stringify(g.query)} ${JSON.stringify(g.body)?.slice(0, 300)} → ${res.statusCode} ${res.body.slice(0, 300)}`;
        assert.ok(res.statusCode < 500, context);
        if (res.statusCode === 422) {
          const errors = (res.json<{ errors?: { type: string }[] }>().errors ?? []).map((e) => e.type);
          assert.ok(errors.length > 0 && errors.every((type) => !SCHEMA_KEYWORDS.has(type)), `the document calls this valid: ${context}`);
        }
        // the same request without a query parameter the document calls required
        const requiredQuery = g.op.params.find((p) => p.in === 'query' && p.required && p.name in g.query);
        if (requiredQuery) {
          const query = { ...g.query };
          delete query[requiredQuery.name];
          const res = await send({ ...g, query }, g.body);
          assert.ok(res.statusCode >= 400 && res.statusCode < 500, `without ?${requiredQuery.name}: ${context} / ${res.statusCode}`);
          refusedMissing++;
        }
        // the same request without one required body property
        const schema = g.op.body ? resolve(doc, g.op.body) : undefined;
        const required = (schema?.required ?? []).filter((k) => g.body && k in g.body);
        if (required.length === 0) return;
        const dropped = { ...g.body };
        delete dropped[required[0]];
        const missing = await send(g, dropped);
        assert.ok(missing.statusCode >= 400 && missing.statusCode < 500, `without ${required[0]}: ${context} / ${missing.statusCode} ${missing.body.slice(0, 200)}`);
        refusedMissing++;
      }),
      { numRuns: Number(process.env.FUZZ_RUNS ?? 400), interruptAfterTimeLimit: 60000, markInterruptAsFailure: false, endOnFailure: true },
    );
    assert.ok(seen.size >= Math.min(ops.length, 10), `operations exercised: ${seen.size} of ${ops.length}`);
    assert.ok(refusedMissing > 0, 'requests without a required property were tried');
  });
});
