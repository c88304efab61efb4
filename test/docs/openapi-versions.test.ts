import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { compileErrors, validate } from '@readme/openapi-parser';
import { buildTestApp } from '../helpers/app.ts';

interface Doc {
  info: { version: string };
  paths: Record<string, Record<string, unknown>>;
  components: { securitySchemes: Record<string, { flows: { password: { tokenUrl: string } } }> };
}

describe('one OpenAPI document per API version', () => {
  let app: FastifyInstance;
  let v1: Doc;
  let v2: Doc;
  before(async () => {
    app = await buildTestApp(undefined);
    v1 = (await app.inject({ method: 'GET', url: '/openapi.json' })).json<Doc>();
    const res = await app.inject({ method: 'GET', url: '/openapi-v2.json' });
    assert.equal(res.statusCode, 200);
    v2 = res.json<Doc>();
  });
  after(() => app.close());

  it('v2 passes the validator, lists the v2 paths (the cancel route among them) and no v1 path', async () => {
    const result = await validate(structuredClone(v2) as never);
    assert.ok(result.valid, result.valid ? '' : compileErrors(result));
    assert.equal(v2.info.version, '2.0.0');
    const paths = Object.keys(v2.paths);
    assert.ok(v2.paths['/api/v2/orders/{order_id}/cancel']?.post);
    assert.ok(v2.paths['/api/v2/webhooks/orders/cancelled']?.post);
    assert.deepEqual(paths.filter((p) => p.startsWith('/api/v1/')), []);
    assert.equal(Object.values(v2.components.securitySchemes)[0].flows.password.tokenUrl, '/api/v2/auth/login');
    // every v1 path has its v2 twin
    for (const p of Object.keys(v1.paths).filter((x) => x.startsWith('/api/v1/'))) assert.ok(v2.paths[p.replace('/api/v1/', '/api/v2/')], p);
    assert.match(JSON.stringify(v2.paths['/api/v2/orders/{order_id}']), /"cancelled"/);
  });

  it('v1 stays v1: no v2 path, no cancel route, no cancelled status anywhere', () => {
    assert.deepEqual(Object.keys(v1.paths).filter((p) => p.startsWith('/api/v2/') || p.endsWith('/cancel')), []);
    // (the trace's jobs have a pg-boss state of that name, which is no order status)
    const orderPaths = Object.entries(v1.paths).filter(([p]) => !p.endsWith('/trace'));
    assert.doesNotMatch(JSON.stringify(orderPaths), /"cancelled"|cancelled_at|order\.cancelled/);
    assert.match(JSON.stringify(v1.paths['/api/v1/orders']), /"failed"/);
  });

  it('each version has its own page, whose own json route serves its document; /docs?version=v2 leads to /docs/v2', async () => {
    for (const [page, version] of [['/docs', '1.0.0'], ['/docs/v2', '2.0.0']] as const) {
      const html = await app.inject({ method: 'GET', url: page });
      assert.equal(html.statusCode, 200);
      assert.match(String(html.headers['content-type']), /text\/html/);
      assert.match(html.body, new RegExp(`API v${version[0]} reference`));
      const own = await app.inject({ method: 'GET', url: `${page}/json` });
      assert.equal(own.json<Doc>().info.version, version, `${page}/json`);
    }
    const earlier = await app.inject({ method: 'GET', url: '/docs?version=v2' });
    assert.equal(earlier.statusCode, 302);
    assert.equal(earlier.headers.location, '/docs/v2');
    assert.equal((await app.inject({ method: 'GET', url: '/docs?version=v1' })).statusCode, 200);
  });
});
