import type { FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { API_VERSIONS, apiPrefix, type ApiVersion } from './api-version.ts';
import { ERROR_STATUS } from './errors.ts';

export const API_PREFIX = '/api/v1';
export const SECURITY_SCHEME = 'OAuth2PasswordBearer';

/** The OpenAPI document of each version, and the decorator that builds it. */
const DOCUMENTS: Record<ApiVersion, { path: string; decorator: string; title: string }> = {
  v1: { path: '/openapi.json', decorator: 'swagger', title: 'v1' },
  v2: { path: '/openapi-v2.json', decorator: 'swaggerV2', title: 'v2 (orders can be cancelled)' },
};

const VERSION_NOTES: Record<ApiVersion, string> = {
  v1: 'This is **v1**, the specification\'s contract, unchanged. A cancelled order reads `failed` here.',
  v2: 'This is **v2**: the same routes, authentication, rate limits and errors as v1, plus order cancellation ' +
    '(status `cancelled`, POST /orders/{order_id}/cancel, event kind `order.cancelled`) and `failure_reason`, ' +
    '`cancelled_at` on order reads.',
};

/** Whether a route of the whole app belongs in `version`'s document: its own prefix, or outside every version. */
function belongsTo(url: string, version: ApiVersion): boolean {
  const versioned = API_VERSIONS.find((v) => url.startsWith(`${apiPrefix(v)}/`));
  return versioned === undefined || versioned === version;
}

/**
 * OpenAPI 3.1 generated from the route schemas, one document per API version (/openapi.json is v1,
 * /openapi-v2.json is v2; the operational routes appear in both), and Swagger UI at /docs with a
 * selector between them.
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
          title: 'Order and Account Service',
          version: version === 'v1' ? '1.0.0' : '2.0.0',
          description:
            'User accounts, orders processed in the background, an owner-scoped item collection and webhooks.\n\n' +
            `${VERSION_NOTES[version]}\n\n` +
            'Every error has the body `{detail, error_code}`; 422 adds `errors`. Error codes: ' +
            Object.keys(ERROR_STATUS)
              .map((c) => `\`${c}\``)
              .join(', ') +
            '.\n\nUse **Authorize** with your e-mail as username to sign in.',
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
    });
  }
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: {
      persistAuthorization: true,
      docExpansion: 'list',
      deepLinking: true,
      // the top bar's selector between the versions' documents; v1 first, as before
      urls: API_VERSIONS.map((v) => ({ url: DOCUMENTS[v].path, name: DOCUMENTS[v].title })),
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
