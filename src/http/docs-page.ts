import type { FastifySwaggerUiOptions } from '@fastify/swagger-ui';
import type { ApiVersion } from './api-version.ts';

// The Swagger UI page of each API version. The plugins' source runs in the browser: each is self-contained.

export const DOCS_TITLE = 'Order and Account Service';

export const DOCS_PAGES: Record<ApiVersion, string> = { v1: '/docs', v2: '/docs/v2' };

/** The icon of the docs pages and the console: a plain monogram, no third-party mark. */
export const FAVICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1f3a5f"/>' +
  '<text x="16" y="22" font-family="sans-serif" font-size="16" font-weight="bold" fill="#fff" text-anchor="middle">OA</text></svg>';

/** Loads and shows the version's own document (`/openapi.json`, `/openapi-v2.json`), not the copy next to the page. */
function ownDocument() {
  const own = (url: unknown) => {
    if (typeof url !== 'string') return url;
    const found = /\/docs(\/v2)?\/json$/.exec(url);
    return found ? new URL(found[1] ? '/openapi-v2.json' : '/openapi.json', url).href : url;
  };
  const wrap = (original: (url: unknown) => unknown) => (url: unknown) => original(own(url));
  return { statePlugins: { spec: { wrapActions: { updateUrl: wrap, download: wrap } } } };
}

/**
 * Swagger UI's order of a tag's operations: the document's, deletions last (else DELETE /x/{id} precedes GET /x/{id}/y,
 * which needs what it deletes). Its arguments are Immutable maps, not the strings the types say. Keep in step with
 * pageOrder (test/helpers/docs-order.ts), which test/docs/docs-browser.test.ts holds to the page.
 */
function deletionsLast(a: unknown, b: unknown): number {
  const deletes = (op: unknown) => Number((op as { get: (key: string) => unknown }).get('method') === 'delete');
  return deletes(a) - deletes(b);
}

interface SwaggerSystem {
  React: { createElement: (type: unknown, props: Record<string, unknown> | null, ...children: unknown[]) => unknown };
}

/** A row of links above the document's title: one per API version, the page's own marked as current. */
function versionSwitch(system: SwaggerSystem) {
  const h = system.React.createElement;
  const pages = [
    ['v1', '/docs', 'the specification’s contract'],
    ['v2', '/docs/v2', 'adds order cancellation'],
  ];
  const path = (globalThis as unknown as { location: { pathname: string } }).location.pathname.replace(/\/$/, '');
  const current = path === '/docs/v2' ? 'v2' : 'v1';
  const links = pages.map(([version, href, what]) =>
    version === current
      ? h('strong', { key: version, 'aria-current': 'page', className: 'version-switch__current' }, `API ${version}`, h('span', null, ` — ${what}`))
      : h('a', { key: version, href, className: 'version-switch__link' }, `API ${version}`, h('span', null, ` — ${what}`)),
  );
  return {
    wrapComponents: {
      InfoContainer: (Original: unknown) => (props: Record<string, unknown>) =>
        h('div', null, h('nav', { className: 'version-switch', 'aria-label': 'API version' }, ...links), h(Original, props)),
    },
  };
}

/** The version switch's look, and an Authorize dialog with only the e-mail and password the service needs. */
const STYLE = `
.version-switch { display: flex; gap: 8px; margin: 20px 0 0; font-family: sans-serif; font-size: 14px; }
.version-switch a, .version-switch strong { padding: 6px 12px; border: 1px solid #1f3a5f; border-radius: 4px; color: #1f3a5f; text-decoration: none; }
.version-switch strong { background: #1f3a5f; color: #fff; }
.version-switch a:hover { background: #e8eef5; }
.auth-container .scope-def,
.auth-container .wrapper:has(> section > #password_type),
.auth-container .wrapper:has(> section > #client_id_password),
.auth-container .wrapper:has(> section > #client_secret_password) { display: none; }
`;

/** @fastify/swagger-ui's options for a version's page; v2's `json` route serves `document()`. */
export function docsPageOptions(version: ApiVersion, document: () => Record<string, unknown>): FastifySwaggerUiOptions {
  return {
    routePrefix: DOCS_PAGES[version],
    ...(version === 'v1' ? {} : { transformSpecification: () => document(), transformSpecificationClone: false }),
    // no third-party logo, favicon or title: the page is the service's own
    logo: { type: 'image/svg+xml', content: FAVICON },
    theme: {
      title: `${DOCS_TITLE} — API ${version} reference`,
      favicon: [{ filename: 'favicon.svg', rel: 'icon', sizes: 'any', type: 'image/svg+xml', content: FAVICON }],
      css: [{ filename: 'docs.css', content: STYLE }],
    },
    uiConfig: {
      // without the standalone top bar (its "Explore" box): the version switch takes its place
      layout: 'BaseLayout',
      plugins: [ownDocument, versionSwitch],
      persistAuthorization: true,
      docExpansion: 'list',
      operationsSorter: deletionsLast,
      deepLinking: true,
    },
    // the plugin's own policy, but style-src allows the inline styles Swagger UI sets at run time
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
  };
}
