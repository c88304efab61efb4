import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { FAVICON } from './docs-page.ts';
import { AppError } from './errors.ts';

/** Where `npm ci` (scripts/build-console.ts) writes the console. */
const CONSOLE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'build', 'console');

/** The console's own files and this origin only, nothing inline, and no HTML DOM sinks (Trusted Types, no policy). */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join('; ');

interface StaticFile {
  type: string;
  cache: string;
  /** the file, and its precompressed copies by content coding */
  bodies: { identity: Buffer; br?: Buffer; gzip?: Buffer };
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};
const IMMUTABLE = 'public, max-age=31536000, immutable';

/** The build in `dir`: its page and its assets by file name; undefined when it was not built. */
function loadBuild(dir: string, currency: string): { index: StaticFile; assets: Map<string, StaticFile> } | undefined {
  if (!fs.existsSync(path.join(dir, 'index.html'))) return undefined;
  const optional = (p: string) => (fs.existsSync(p) ? fs.readFileSync(p) : undefined);
  const assets = new Map<string, StaticFile>();
  for (const name of fs.readdirSync(path.join(dir, 'assets'))) {
    const type = TYPES[path.extname(name)];
    if (!type) continue;
    const file = path.join(dir, 'assets', name);
    assets.set(name, { type, cache: IMMUTABLE, bodies: { identity: fs.readFileSync(file), br: optional(`${file}.br`), gzip: optional(`${file}.gz`) } });
  }
  // the page with the currency written in (`<meta name="currency">`), compressed here: the build cannot know it
  const html = Buffer.from(fs.readFileSync(path.join(dir, 'index.html'), 'utf8').replaceAll('%CURRENCY%', currency.replace(/[^A-Z]/g, '')));
  const bodies = { identity: html, br: zlib.brotliCompressSync(html), gzip: zlib.gzipSync(html, { level: 9 }) };
  return { index: { type: TYPES['.html'], cache: 'no-cache', bodies }, assets };
}

/** Whether `accept-encoding` admits `coding` (named, and not with q=0). */
export function accepts(header: string | undefined, coding: string): boolean {
  for (const part of (header ?? '').split(',')) {
    const [name, ...params] = part.split(';').map((s) => s.trim());
    if (name.toLowerCase() !== coding) continue;
    const q = params.find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  }
  return false;
}

function send(request: FastifyRequest, reply: FastifyReply, file: StaticFile) {
  const accept = request.headers['accept-encoding'];
  const { br, gzip, identity } = file.bodies;
  const [coding, body] = br && accepts(accept, 'br') ? ['br', br] : gzip && accepts(accept, 'gzip') ? ['gzip', gzip] : [undefined, identity];
  if (coding) void reply.header('content-encoding', coding);
  return reply.header('content-security-policy', CONSOLE_CSP).header('vary', 'accept-encoding').header('cache-control', file.cache).type(file.type).send(body);
}

const NOT_BUILT =
  '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Console not built</title></head><body><main>' +
  '<h1>The console is not built</h1><p>It is built by <code>npm ci</code> with the dev dependencies installed ' +
  '(esbuild and Preact), or by <code>npm run build:console</code>. The API works without it.</p></main></body></html>';

/** The console, one page for every /console address: public and not rate-limited (it holds no data; its API calls are checked). */
export function registerConsole(app: FastifyInstance, opts: { dir?: string; currency?: string } = {}): void {
  const dir = opts.dir ?? CONSOLE_DIR;
  const build = loadBuild(dir, opts.currency ?? 'USD');
  if (!build) app.log.warn({ dir }, 'console not built: /console answers 503 (npm ci with dev dependencies builds it)');
  const options = { config: { auth: 'public', rateLimitBucket: 'none' }, schema: { hide: true } } as const;

  const page = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!build) return reply.code(503).header('content-security-policy', CONSOLE_CSP).header('cache-control', 'no-store').type(TYPES['.html']).send(NOT_BUILT);
    return send(request, reply, build.index);
  };
  app.get('/console', options, page);
  app.get('/console/*', options, page);
  app.get('/console/assets/:file', options, async (request, reply) => {
    const file = build?.assets.get((request.params as { file: string }).file);
    if (!file) throw new AppError('NOT_FOUND', 'Not Found');
    return send(request, reply, file);
  });
  app.get('/console/favicon.svg', options, async (_request, reply) =>
    reply.header('cache-control', 'public, max-age=86400').type('image/svg+xml').send(FAVICON),
  );
}
