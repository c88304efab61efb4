import type { FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { ERROR_STATUS } from './errors.ts';

export const API_PREFIX = '/api/v1';
export const SECURITY_SCHEME = 'OAuth2PasswordBearer';
const DOCS_TITLE = 'Order and Account Service';

/** The docs page's icon: a plain monogram, no third-party mark. */
const FAVICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1f3a5f"/>' +
  '<text x="16" y="22" font-family="sans-serif" font-size="16" font-weight="bold" fill="#fff" text-anchor="middle">OA</text></svg>';

/**
 * A Swagger UI plugin (its source is sent to the browser and runs there): the page loads, and shows
 * as its source, the document at `/openapi.json` (the address the README gives integrators) instead
 * of the `/docs/json` copy that @fastify/swagger-ui points Swagger UI at.
 */
function documentAtOpenApiJson() {
  const own = (url: unknown) => (typeof url === 'string' && /\/docs\/json$/.test(url) ? new URL('/openapi.json', url).href : url);
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

/** OpenAPI 3.1 generated from the route schemas, Swagger UI at /docs, the raw document at /openapi.json. */
export async function registerDocs(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: DOCS_TITLE,
        version: '1.0.0',
        description:
          'User accounts, orders processed in the background, an owner-scoped item collection and webhooks.\n\n' +
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
            flows: { password: { tokenUrl: `${API_PREFIX}/auth/login`, scopes: {} } },
          },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
  });
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
      plugins: [documentAtOpenApiJson],
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
  app.get('/openapi.json', { config: { auth: 'public', rateLimit: 'none' }, schema: { hide: true } }, async () => app.swagger());
  app.get('/', { config: { auth: 'public', rateLimit: 'none' }, schema: { hide: true } }, async (_req, reply) =>
    reply.redirect('/docs', 302),
  );
}
