import type { FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { ERROR_STATUS } from './errors.ts';
import type { RouteInfo } from './security.ts';

export const API_PREFIX = '/api/v1';
export const SECURITY_SCHEME = 'OAuth2PasswordBearer';

/** OpenAPI 3.1 generated from the route schemas, Swagger UI at /docs, the raw document at /openapi.json. */
export async function registerDocs(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Order and Account Service',
        version: '1.0.0',
        description:
          'User accounts, orders processed in the background, an owner-scoped item collection and webhooks.\n\n' +
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
            flows: { password: { tokenUrl: `${API_PREFIX}/auth/login`, scopes: {} } },
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
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { persistAuthorization: true, docExpansion: 'list', deepLinking: true },
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
  app.get('/openapi.json', { config: { auth: 'public', rateLimit: 'none' }, schema: { hide: true } }, async () => app.swagger());
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
 * has it), every response of a rate-limited route carries the X-RateLimit-* headers, and its 429
 * carries Retry-After.
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
      if (!limited.has(`${method} ${path}`) || !op.responses) continue;
      for (const [status, response] of Object.entries(op.responses)) {
        response.headers = { ...response.headers, ...RATE_LIMIT_HEADERS, ...(status === '429' ? RETRY_AFTER : {}) };
      }
    }
  }
}
