import type { FastifyInstance } from 'fastify';
import helmet, { type HelmetOptions } from 'helmet';

/** Helmet's headers, worked out once (no CSP nonce, so they never change), set first thing so every error reply has them. */
export function registerSecurityHeaders(app: FastifyInstance, options: HelmetOptions): void {
  const headers = new Map<string, string>();
  const res = { setHeader: (name: string, value: string) => headers.set(name, value), removeHeader: (name: string) => headers.delete(name) };
  let failure: unknown;
  helmet(options)({} as never, res as never, (err?: unknown) => {
    failure = err;
  });
  if (failure) throw failure instanceof Error ? failure : new Error(String(failure));
  app.addHook('onRequest', (_request, reply, done) => {
    for (const [name, value] of headers) reply.raw.setHeader(name, value);
    done();
  });
}

/** `Cache-Control: no-store` under `prefixes` (tokens, personal data), by matched route or decoded path, never the client's spelling. */
export function registerNoStore(app: FastifyInstance, prefixes: readonly string[]): void {
  const under = (path: string, prefix: string) => path.startsWith(prefix) && (path.length === prefix.length || path[prefix.length] === '/');
  app.addHook('onRequest', (request, reply, done) => {
    const path = request.routeOptions.url ?? decodedPath(request.url);
    if (prefixes.some((prefix) => under(path, prefix))) reply.raw.setHeader('cache-control', 'no-store');
    done();
  });
}

/** The path of `url` with its percent-escapes decoded (left as sent when they are malformed). */
function decodedPath(url: string): string {
  const end = url.search(/[?#]/);
  const path = end === -1 ? url : url.slice(0, end);
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}
