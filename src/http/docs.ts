import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { API_VERSIONS, apiPrefix, type ApiVersion } from './api-version.ts';
import { SECURITY_SCHEME } from './auth.ts';
import { DOCS_PAGES, DOCS_TITLE, docsPageOptions } from './docs-page.ts';
import { ERROR_STATUS } from './errors.ts';
import { refineDocument, type OpenApiDocument } from './openapi-document.ts';
import { NEEDS_FIRST, THEN } from './openapi-try-it.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** a body the documents show but the route does not validate (the platform's signed raw body) */
    documentedBody?: unknown;
  }
}

/** The OpenAPI document of each version, and the decorator that builds it. */
const DOCUMENTS: Record<ApiVersion, { path: string; decorator: string }> = {
  v1: { path: '/openapi.json', decorator: 'swagger' },
  v2: { path: '/openapi-v2.json', decorator: 'swaggerV2' },
};

const VERSION_NOTES: Record<ApiVersion, string> = {
  v1:
    "This is **v1**, the specification's contract, unchanged. A cancelled order reads `failed` here. " +
    `The v2 reference, which adds order cancellation: [${DOCS_PAGES.v2}](${DOCS_PAGES.v2}).`,
  v2:
    'This is **v2**: the same routes, authentication, rate limits and errors as v1, plus order cancellation ' +
    '(status `cancelled`, POST /orders/{order_id}/cancel, event kind `order.cancelled`) and `failure_reason`, ' +
    `\`cancelled_at\` on order reads. The v1 reference: [${DOCS_PAGES.v1}](${DOCS_PAGES.v1}).`,
};

function description(version: ApiVersion): string {
  return (
    'User accounts, orders processed in the background, an owner-scoped item collection and webhooks.\n\n' +
    `${VERSION_NOTES[version]}\n\n` +
    '**Try it out**: sign in with **Authorize** (your e-mail as username; a fresh `npm start` prints the ' +
    "administrator's password), then run the operations from the top. The examples are written for a fresh start " +
    'with the demo catalogue: an order for its first product, and path ids that name the rows the create examples ' +
    'above them make (the user POST /users makes is 2, the administrator being 1); each deletion comes after the ' +
    `operations that use what it deletes. An operation whose example needs something a fresh start does not have (a password, ` +
    `a token from an e-mail, a failed order, a message id, a signed platform webhook) says so in its description (${NEEDS_FIRST}); ` +
    `one after which the page must sign in again says that too (${THEN}).\n\n` +
    'Every error has the body `{detail, error_code}`; 422 adds `errors`. A string (or a key) in a JSON body, the query ' +
    'or the path holding a NUL character (U+0000) or an unpaired surrogate (`\\uD800` alone) is 422 `VALIDATION_ERROR` ' +
    "(400 `INVALID_INPUT` in PATCH /items/{item_id}): PostgreSQL cannot store it as sent (the platform's signed webhooks " +
    'are stored as they come). Each response lists its codes, with an example of each. All codes: ' +
    Object.keys(ERROR_STATUS)
      .map((c) => `\`${c}\``)
      .join(', ') +
    '.\n\nAn unsupported method on a known path is answered 405 `METHOD_NOT_ALLOWED` with an `Allow` header ' +
    'listing the methods the path takes; an unknown path is 404 `NOT_FOUND`. Before a request reaches a route, a ' +
    'malformed request is 400 `BAD_REQUEST`, headers over 16 KiB are 431 `HEADERS_TOO_LARGE` and a request that ' +
    'does not arrive in time is 408 `REQUEST_TIMEOUT`.'
  );
}

/** Whether a route of the whole app belongs in `version`'s document: its own prefix, or outside every version. */
function belongsTo(url: string, version: ApiVersion): boolean {
  const versioned = API_VERSIONS.find((v) => url.startsWith(`${apiPrefix(v)}/`));
  return versioned === undefined || versioned === version;
}

/** An OpenAPI 3.1 document and a Swagger UI page per API version, from the route schemas. */
export async function registerDocs(app: FastifyInstance): Promise<void> {
  for (const version of API_VERSIONS) {
    await app.register(swagger, {
      decorator: DOCUMENTS[version].decorator,
      transform: ({ schema, url, route }) => {
        const body = route.config?.documentedBody;
        return { schema: { ...schema, ...(body === undefined ? {} : { body }), ...(belongsTo(url, version) ? {} : { hide: true }) }, url };
      },
      openapi: {
        openapi: '3.1.0',
        info: { title: DOCS_TITLE, version: version === 'v1' ? '1.0.0' : '2.0.0', description: description(version) },
        servers: [{ url: '/' }],
        components: {
          securitySchemes: {
            [SECURITY_SCHEME]: {
              type: 'oauth2',
              description: 'Your e-mail address as username, and your password.',
              flows: { password: { tokenUrl: `${apiPrefix(version)}/auth/login`, scopes: {} } },
            },
          },
        },
      },
      refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
      transformObject: (document) => {
        const openapi = 'openapiObject' in document ? document.openapiObject : document.swaggerObject;
        refineDocument(openapi as OpenApiDocument, app.routeTable, apiPrefix(version));
        return openapi;
      },
    });
  }
  const options = { config: { auth: 'public', rateLimitBucket: 'none' }, schema: { hide: true } } as const;
  for (const version of API_VERSIONS) {
    const build = (app as unknown as Record<string, () => Record<string, unknown>>)[DOCUMENTS[version].decorator].bind(app);
    // each page in a scope of its own: @fastify/swagger-ui decorates the scope it is registered in
    await app.register(async (scope) => {
      await scope.register(swaggerUi, {
        ...docsPageOptions(version, build),
        ...(version === 'v1' ? { uiHooks: { onRequest: redirectVersionQuery } } : {}),
      });
    });
    app.get(DOCUMENTS[version].path, options, async () => build());
  }
  app.get('/', options, async (_req, reply) => reply.redirect(DOCS_PAGES.v1, 302));
}

/** `/docs?version=v2`, the v2 page's earlier address, leads to /docs/v2. */
function redirectVersionQuery(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  const path = request.url.split('?')[0].replace(/\/$/, '');
  if (path === DOCS_PAGES.v1 && (request.query as Record<string, unknown> | undefined)?.version === 'v2') void reply.redirect(DOCS_PAGES.v2, 302);
  else done();
}
