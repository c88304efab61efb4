import type { FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { API_VERSIONS, apiPrefix, type ApiVersion } from './api-version.ts';
import { ERROR_STATUS } from './errors.ts';
import type { RouteInfo } from './security.ts';

export const API_PREFIX = '/api/v1';
export const SECURITY_SCHEME = 'OAuth2PasswordBearer';

const DOCS_TITLE = 'Order and Account Service';

/** The icon of the docs page and the console: a plain monogram, no third-party mark. */
export const FAVICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1f3a5f"/>' +
  '<text x="16" y="22" font-family="sans-serif" font-size="16" font-weight="bold" fill="#fff" text-anchor="middle">OA</text></svg>';

/**
 * A Swagger UI plugin (its source is sent to the browser and runs there): the page loads, and shows
 * as its source, the version's own document — `/openapi.json` (v1, the address the README gives
 * integrators), or `/openapi-v2.json` when the page is `/docs?version=v2` — instead of the
 * `/docs/json` copy that @fastify/swagger-ui points Swagger UI at. Without the top bar there is no
 * document selector; each document's description links to the other version's page instead.
 */
function documentOfVersion() {
  const page = (globalThis as unknown as { location: { search: string } }).location;
  const path = new URLSearchParams(page.search).get('version') === 'v2' ? '/openapi-v2.json' : '/openapi.json';
  const own = (url: unknown) => (typeof url === 'string' && /\/docs\/json$/.test(url) ? new URL(path, url).href : url);
  return {
    statePlugins: {
      spec: {
        wrapActions: {
          updateUrl: (original: (url: unknown) => unknown) => (url: unknown) => original(own(url)),
          download: (original: (url: unknown) => unknown) => (url: unknown) => original(own(url)),
        },
      },
    },
  };
}

/** The OpenAPI document of each version, and the decorator that builds it. */
const DOCUMENTS: Record<ApiVersion, { path: string; decorator: string }> = {
  v1: { path: '/openapi.json', decorator: 'swagger' },
  v2: { path: '/openapi-v2.json', decorator: 'swaggerV2' },
};

const VERSION_NOTES: Record<ApiVersion, string> = {
  v1: 'This is **v1**, the specification\'s contract, unchanged. A cancelled order reads `failed` here. ' +
    'The v2 reference: [/docs?version=v2](/docs?version=v2).',
  v2: 'This is **v2**: the same routes, authentication, rate limits and errors as v1, plus order cancellation ' +
    '(status `cancelled`, POST /orders/{order_id}/cancel, event kind `order.cancelled`) and `failure_reason`, ' +
    '`cancelled_at` on order reads. The v1 reference: [/docs](/docs).',
};

/** Whether a route of the whole app belongs in `version`'s document: its own prefix, or outside every version. */
function belongsTo(url: string, version: ApiVersion): boolean {
  const versioned = API_VERSIONS.find((v) => url.startsWith(`${apiPrefix(v)}/`));
  return versioned === undefined || versioned === version;
}

/**
 * OpenAPI 3.1 generated from the route schemas, one document per API version (/openapi.json is v1,
 * /openapi-v2.json is v2; the operational routes appear in both), and Swagger UI at /docs (v1) and
 * /docs?version=v2.
 */
export async function registerDocs(app: FastifyInstance): Promise<void> {
  for (const version of API_VERSIONS) {
    const document = DOCUMENTS[version];
    await app.register(swagger, {
      decorator: document.decorator,
      transform: ({ schema, url }) => ({ schema: belongsTo(url, version) ? schema : { ...schema, hide: true }, url }),
      openapi: {
        openapi: '3.1.0',
        info: {
          title: DOCS_TITLE,
          version: version === 'v1' ? '1.0.0' : '2.0.0',
          description:
            'User accounts, orders processed in the background, an owner-scoped item collection and webhooks.\n\n' +
            `${VERSION_NOTES[version]}\n\n` +
            'Every error has the body `{detail, error_code}`; 422 adds `errors`. Error codes: ' +
            Object.keys(ERROR_STATUS)
              .map((c) => `\`${c}\``)
              .join(', ') +
            '.\n\nAn unsupported method on a known path is answered 405 `METHOD_NOT_ALLOWED` with an `Allow` header ' +
            'listing the methods the path takes; an unknown path is 404 `NOT_FOUND`.' +
            '\n\nUse **Authorize** with your e-mail as username to sign in.',
        },
        servers: [{ url: '/' }],
        components: {
          securitySchemes: {
            [SECURITY_SCHEME]: {
              type: 'oauth2',
              flows: { password: { tokenUrl: `${apiPrefix(version)}/auth/login`, scopes: {} } },
            },
          },
        },
      },
      refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
      transformObject: (document) => {
        const openapi = 'openapiObject' in document ? document.openapiObject : document.swaggerObject;
        preciseDocument(openapi as OpenApiDocument, app.routeTable);
        return openapi;
      },
    });
  }
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    // no third-party logo, favicon or title: the page is the service's own
    logo: { type: 'image/svg+xml', content: FAVICON },
    theme: {
      title: `${DOCS_TITLE} — API reference`,
      favicon: [{ filename: 'favicon.svg', rel: 'icon', sizes: 'any', type: 'image/svg+xml', content: FAVICON }],
    },
    uiConfig: {
      // BaseLayout: the operations without the standalone top bar (its logo and the "Explore" box
      // with a document address of its own)
      layout: 'BaseLayout',
      plugins: [documentOfVersion],
      persistAuthorization: true,
      docExpansion: 'list',
      deepLinking: true,
    },
    // @fastify/swagger-ui's own policy (staticCSP: true), except that style-src allows inline styles:
    // Swagger UI sets some element styles at run time, which that policy blocks. Scripts stay 'self' only.
    staticCSP: {
      'default-src': ["'self'"],
      'base-uri': ["'self'"],
      'font-src': ["'self'", 'https:', 'data:'],
      'frame-ancestors': ["'self'"],
      'img-src': ["'self'", 'data:', 'validator.swagger.io'],
      'object-src': ["'none'"],
      'script-src': ["'self'"],
      'script-src-attr': ["'none'"],
      'style-src': ["'self'", 'https:', "'unsafe-inline'"],
    },
  });
  for (const version of API_VERSIONS) {
    const document = DOCUMENTS[version];
    const build = (app as unknown as Record<string, () => unknown>)[document.decorator].bind(app);
    app.get(document.path, { config: { auth: 'public', rateLimit: 'none' }, schema: { hide: true } }, async () => build());
  }
  app.get('/', { config: { auth: 'public', rateLimit: 'none' }, schema: { hide: true } }, async (_req, reply) =>
    reply.redirect('/docs', 302),
  );
}

interface OpenApiResponse {
  description?: string;
  headers?: Record<string, unknown>;
  content?: Record<string, unknown>;
}
interface OpenApiOperation {
  parameters?: { in: string; name: string; required?: boolean; schema?: { default?: unknown } }[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: { anyOf?: { type?: unknown }[] } }> };
  responses?: Record<string, OpenApiResponse>;
}
interface OpenApiDocument {
  paths?: Record<string, Record<string, OpenApiOperation>>;
}

const integerHeader = (description: string) => ({ description, schema: { type: 'integer', minimum: 0 } });
const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': integerHeader('requests allowed in the window'),
  'X-RateLimit-Remaining': integerHeader('requests left in the window'),
  'X-RateLimit-Reset': integerHeader('seconds until the window resets'),
};
const RETRY_AFTER = { 'Retry-After': integerHeader('seconds to wait before trying again') };

/**
 * What the route schemas cannot say by themselves: a query parameter with a default is optional
 * (the validator fills the default in; the schema lists it as required only so the handler's type
 * has it), a body whose schema admits `null` is optional (@fastify/swagger marks every body
 * required, but the JSON parser reads an empty body as none), every response of a rate-limited
 * route carries the X-RateLimit-* headers, and its 429 carries Retry-After.
 */
function preciseDocument(doc: OpenApiDocument, routes: readonly RouteInfo[]): void {
  const limited = new Set(
    routes.filter((r) => r.rateLimit !== 'none').map((r) => `${r.method.toLowerCase()} ${r.url.replace(/:(\w+)/g, '{$1}')}`),
  );
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(item)) {
      for (const p of op.parameters ?? []) {
        if (p.in !== 'path' && p.schema?.default !== undefined) delete p.required;
      }
      if (op.requestBody && admitsNull(op.requestBody.content?.['application/json']?.schema)) op.requestBody.required = false;
      if (!limited.has(`${method} ${path}`) || !op.responses) continue;
      for (const [status, response] of Object.entries(op.responses)) {
        response.headers = { ...response.headers, ...RATE_LIMIT_HEADERS, ...(status === '429' ? RETRY_AFTER : {}) };
      }
    }
  }
}

function admitsNull(schema: { anyOf?: { type?: unknown }[] } | undefined): boolean {
  return schema?.anyOf?.some((s) => s.type === 'null') ?? false;
}
