import type { FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { ERROR_STATUS } from './errors.ts';

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
