import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { buildTestApp } from '../helpers/app.ts';

interface Param {
  in: string;
  name: string;
  required?: boolean;
}
interface Op {
  parameters?: Param[];
  requestBody?: { content: Record<string, { schema: { properties: Record<string, Record<string, unknown>> } }> };
  responses: Record<string, { headers?: Record<string, unknown> }>;
}
type Doc = { info: { description: string }; paths: Record<string, Record<string, Op>>; components: { schemas: Record<string, { properties: Record<string, { enum?: string[] }> }> } };

describe('the OpenAPI document states what the service enforces', () => {
  let app: FastifyInstance;
  let doc: Doc;
  before(async () => {
    app = await buildTestApp(undefined);
    doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json<Doc>();
  });
  after(() => app.close());

  const operations = () => Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ path, method, op })));
  const body = (path: string, method: string) => doc.paths[path][method].requestBody!.content['application/json'].schema;

  it('optional paging parameters are not required', () => {
    let seen = 0;
    for (const { path, method, op } of operations()) {
      for (const p of op.parameters ?? []) {
        if (!['page', 'page_size', 'skip', 'limit'].includes(p.name)) continue;
        seen++;
        assert.notEqual(p.required, true, `${method} ${path}: ${p.name}`);
      }
    }
    assert.ok(seen >= 8, `paging parameters seen: ${seen}`);
    // and the service agrees: lists answer without them
    assert.ok(operations().some(({ path }) => path === '/api/v1/items'));
  });

  it('money is a multiple of 0.01, a subscription url is a URI, an item price has a maximum', () => {
    assert.equal(body('/api/v1/products', 'post').properties.price.multipleOf, 0.01);
    assert.equal(body('/api/v1/products/{product_id}', 'patch').properties.price.multipleOf, 0.01);
    assert.equal(body('/api/v1/webhooks/subscriptions', 'post').properties.url.format, 'uri');
    assert.equal(typeof body('/api/v1/items', 'post').properties.price.maximum, 'number');
  });

  it('rate-limited operations declare the X-RateLimit-* headers on every response and Retry-After on 429', () => {
    let limited = 0;
    for (const { path, method, op } of operations()) {
      if (!path.startsWith('/api/v1/') || path === '/api/v1/.well-known/jwks.json') continue;
      const withHeaders = Object.entries(op.responses).filter(([, r]) => r.headers?.['X-RateLimit-Limit']);
      if (withHeaders.length === 0) continue;
      limited++;
      for (const [status, r] of Object.entries(op.responses)) {
        for (const h of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']) assert.ok(r.headers?.[h], `${method} ${path} ${status}: ${h}`);
      }
      const tooMany = op.responses['429'];
      if (tooMany) assert.ok(tooMany.headers?.['Retry-After'], `${method} ${path}: Retry-After on 429`);
    }
    assert.ok(limited > 20, `rate-limited operations documented: ${limited}`);
    const login = doc.paths['/api/v1/auth/login'].post;
    assert.ok(login.responses['429']?.headers?.['Retry-After'], 'sign-in documents its 429 with Retry-After');
    // operations endpoints are not rate limited, and say nothing of it
    assert.equal(doc.paths['/health'].get.responses['200'].headers?.['X-RateLimit-Limit'], undefined);
  });

  it('405 METHOD_NOT_ALLOWED is part of the documented error vocabulary', () => {
    assert.ok(doc.components.schemas.ErrorBody.properties.error_code.enum?.includes('METHOD_NOT_ALLOWED'));
    assert.match(doc.info.description, /405 `METHOD_NOT_ALLOWED`.*Allow/);
  });
});
