import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance, HTTPMethods } from 'fastify';
import { compileErrors, validate } from '@readme/openapi-parser';
import { ERROR_STATUS } from '../../src/http/errors.ts';
import { buildTestApp, errorBody } from '../helpers/app.ts';

interface Operation {
  security?: Record<string, string[]>[];
  responses?: Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }>;
  tags?: string[];
  summary?: string;
}
interface OpenApiDoc {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: {
    securitySchemes: Record<string, { type: string; flows?: { password?: { tokenUrl: string } } }>;
    schemas: Record<string, { properties: Record<string, { enum?: string[] }> }>;
  };
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
const OUTSIDE_API = ['/health', '/ready', '/metrics', '/.well-known/jwks.json'];

/** Every operation of the document, whichever module added it. */
function operations(doc: OpenApiDoc): { path: string; method: string; op: Operation }[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, op]) => ({ path, method, op })),
  );
}

describe('OpenAPI document', () => {
  let app: FastifyInstance;
  let doc: OpenApiDoc;
  before(async () => {
    app = await buildTestApp(undefined);
    const res = await app.inject({ method: 'GET', url: '/openapi.json' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /application\/json/);
    doc = res.json<OpenApiDoc>();
  });
  after(() => app.close());

  it('is OpenAPI 3.1 and passes the validator', async () => {
    assert.match(doc.openapi, /^3\.1\.\d+$/);
    const result = await validate(structuredClone(doc) as never);
    assert.ok(result.valid, result.valid ? '' : compileErrors(result));
    assert.deepEqual(result.warnings, []);
  });

  it('declares the OAuth2 password flow against the login route', () => {
    const schemes = Object.values(doc.components.securitySchemes);
    assert.equal(schemes.length, 1);
    assert.equal(schemes[0].type, 'oauth2');
    assert.equal(schemes[0].flows?.password?.tokenUrl, '/api/v1/auth/login');
    assert.ok(doc.paths['/api/v1/auth/login']?.post, 'the token URL is a documented operation');
  });

  it('lists every error code in the ErrorBody schema', () => {
    const body = doc.components.schemas.ErrorBody;
    assert.ok(body, 'ErrorBody is a named component');
    assert.deepEqual(Object.keys(body.properties).sort(), ['detail', 'error_code', 'errors']);
    assert.deepEqual([...(body.properties.error_code.enum ?? [])].sort(), Object.keys(ERROR_STATUS).sort());
    for (const code of ['VALIDATION_ERROR', 'NOT_AUTHENTICATED', 'INVALID_CREDENTIALS', 'RATE_LIMITED', 'PAYLOAD_TOO_LARGE']) {
      assert.ok(body.properties.error_code.enum?.includes(code), code);
    }
  });

  it('keeps every path under /api/v1 except the operational ones, and hides the docs routes', () => {
    const paths = Object.keys(doc.paths);
    assert.ok(paths.length > 5);
    for (const path of paths) {
      assert.ok(path.startsWith('/api/v1/') || OUTSIDE_API.includes(path), `${path} is outside /api/v1`);
    }
    for (const path of ['/health', '/ready', '/metrics']) assert.ok(doc.paths[path]?.get, `${path} is documented`);
    for (const hidden of ['/', '/docs', '/openapi.json']) assert.equal(doc.paths[hidden], undefined, `${hidden} is hidden`);
  });

  it('gives every operation a summary, a tag, a success response, and ErrorBody for every error response', () => {
    for (const { path, method, op } of operations(doc)) {
      const where = `${method.toUpperCase()} ${path}`;
      assert.ok(op.summary, `${where} has a summary`);
      assert.ok(op.tags?.length, `${where} has a tag`);
      const statuses = Object.keys(op.responses ?? {});
      assert.ok(
        statuses.some((s) => /^2\d\d$/.test(s)),
        `${where} documents a success response`,
      );
      for (const s of statuses.filter((s) => /^[45]\d\d$/.test(s))) {
        if (path === '/ready' && s === '503') continue; // readiness reports its checks, not an error body
        const schema = op.responses?.[s].content?.['application/json']?.schema;
        assert.equal(schema?.$ref, '#/components/schemas/ErrorBody', `${where} ${s} uses ErrorBody`);
      }
    }
  });

  it('declares security on exactly the operations that refuse an anonymous caller', async () => {
    const ops = operations(doc).filter(({ path }) => path.startsWith('/api/v1/'));
    assert.ok(ops.length > 5);
    let secured = 0;
    for (const { path, method, op } of ops) {
      const where = `${method.toUpperCase()} ${path}`;
      // a malformed body: a public route stops at the parser (422) and never runs its handler
      const hasBody = method !== 'get';
      const res = await app.inject({
        method: method.toUpperCase() as HTTPMethods,
        url: path.replace(/\{[^}]+\}/g, '1'),
        ...(hasBody ? { headers: { 'content-type': 'application/json' }, payload: '{' } : {}),
      });
      const needsAuth = res.statusCode === 401 && errorBody(res).error_code === 'NOT_AUTHENTICATED';
      const declared = (op.security ?? []).some((req) => Object.keys(req).includes('OAuth2PasswordBearer'));
      assert.equal(declared, needsAuth, `${where}: security declared=${declared}, anonymous call gave ${res.statusCode} ${res.body}`);
      if (declared) {
        secured++;
        assert.ok(op.responses?.['401'], `${where} documents 401`);
      }
    }
    assert.ok(secured > 0);
    assert.ok(doc.paths['/api/v1/auth/me'].get.security, 'GET /auth/me is secured');
    assert.equal(doc.paths['/api/v1/auth/login'].post.security, undefined, 'login is public');
  });
});

interface ReaderOperation {
  tags?: string[];
  summary?: string;
  parameters?: { in: string; name: string; required?: boolean; example?: unknown; schema?: { default?: unknown } }[];
  requestBody?: { required?: boolean; content: Record<string, { example?: unknown; schema?: unknown }> };
  responses: Record<string, { description?: string; content?: Record<string, { schema?: { $ref?: string }; examples?: Record<string, { value: { error_code: string } }> }> }>;
}
interface ReaderDoc {
  tags: { name: string; description?: string }[];
  paths: Record<string, Record<string, ReaderOperation>>;
}

/**
 * Parameters without an example, and why: a fixed idempotency key would replay the first order on
 * every later try; a device token is a secret an earlier sign-in of the reader's own account answers,
 * so no example can be one (and "Try it out" would send a made-up one).
 */
const WITHOUT_EXAMPLE = new Set(['idempotency-key', 'x-device-token']);

for (const address of ['/openapi.json', '/openapi-v2.json']) {
  describe(`${address} as a reader sees it`, () => {
    let doc: ReaderDoc;
    let ops: { where: string; path: string; method: string; op: ReaderOperation }[];
    before(async () => {
      const app = await buildTestApp(undefined);
      doc = (await app.inject({ method: 'GET', url: address })).json<ReaderDoc>();
      ops = Object.entries(doc.paths).flatMap(([path, item]) =>
        Object.entries(item).map(([method, op]) => ({ where: `${method.toUpperCase()} ${path}`, path, method, op })),
      );
    });

    it('names each tag with a capital and describes it in one line; summaries are plain text', () => {
      for (const tag of doc.tags) {
        assert.match(tag.name, /^[A-Z]/, tag.name);
        assert.match(tag.description ?? '', /^[A-Z][^\n]{10,}$/, `${tag.name} has a one-line description`);
      }
      const declared = new Set(doc.tags.map((t) => t.name));
      for (const { where, op } of ops) {
        for (const tag of op.tags ?? []) assert.ok(declared.has(tag), `${where}: tag ${tag} is declared`);
        assert.doesNotMatch(op.summary ?? '', /`/, `${where}: its summary has no backticks`);
      }
    });

    it('describes every status; each error status lists its own codes, with an example of each', () => {
      for (const { where, op } of ops) {
        for (const [status, response] of Object.entries(op.responses)) {
          assert.ok(response.description && response.description !== 'Default Response', `${where} ${status} is described`);
          const media = response.content?.['application/json'];
          if (!/^[45]/.test(status) || media?.schema?.$ref !== '#/components/schemas/ErrorBody') continue;
          const examples = Object.entries(media.examples ?? {});
          assert.ok(examples.length > 0, `${where} ${status} has examples`);
          for (const [name, example] of examples) {
            assert.equal(example.value.error_code, name, `${where} ${status}: example ${name}`);
            assert.equal(String(ERROR_STATUS[name as keyof typeof ERROR_STATUS]), status, `${where}: ${name} is a ${status} code`);
            assert.ok(response.description.includes(`\`${name}\``), `${where} ${status}: the description names ${name}`);
          }
        }
      }
      assert.equal(doc.paths[Object.keys(doc.paths).find((p) => p.endsWith('/orders'))!].post.responses['201'].description, 'Created');
    });

    it('documents 413 wherever a body is read, and the nesting guard’s 400 and 415 wherever it is read as JSON', () => {
      for (const { where, path, method, op } of ops.filter((o) => ['post', 'put', 'patch', 'delete'].includes(o.method))) {
        assert.ok(op.responses['413'], `${where} documents 413`);
        if (path.includes('/webhooks/orders/')) continue; // the platform's raw, signed body
        assert.ok(op.responses['400'] && op.responses['415'] && op.responses['422'], `${method} ${path} documents 400, 415 and 422`);
        assert.ok(Object.keys(op.responses['400'].content?.['application/json']?.examples ?? {}).includes('BAD_REQUEST'), `${where}: 400 BAD_REQUEST`);
      }
    });

    it('gives every body and required parameter an example (or a default), and no optional filter one that narrows the list; optional bodies are optional; quantity is 1 to 1000', () => {
      for (const { where, op } of ops) {
        const body = op.requestBody?.content['application/json'];
        if (op.requestBody) assert.notEqual(body?.example, undefined, `${where}: its body has an example`);
        for (const p of op.parameters ?? []) {
          if (WITHOUT_EXAMPLE.has(p.name)) continue;
          if (p.required) assert.ok(p.example !== undefined || p.schema?.default !== undefined, `${where}: ${p.in} parameter ${p.name} has an example`);
          // Try it out sends a pre-filled value: an optional one is its default or nothing
          else assert.ok(p.example === undefined || p.example === p.schema?.default, `${where}: optional ${p.in} parameter ${p.name} is not pre-filled (${String(p.example)})`);
        }
      }
      const rotate = ops.find((o) => o.path.endsWith('/rotate-secret'))!.op;
      assert.equal(rotate.requestBody?.required, false);
      const placing = ops.find((o) => o.method === 'post' && o.path.endsWith('/orders'))!.op;
      assert.equal(placing.requestBody?.required, true);
      const line = JSON.stringify(placing.requestBody?.content['application/json'].schema);
      assert.match(line, /"quantity":\{"type":"integer","description":"[^"]*","minimum":1,"maximum":1000\}/);
      assert.doesNotMatch(JSON.stringify(doc), /x-rule-bounds/);
    });
  });
}
