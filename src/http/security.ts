import type { ServerOptions } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import type { AuthLevel } from './auth.ts';
import { AppError } from './errors.ts';
import type { RateLimitBucket } from './rate-limits.ts';

/** What every route declared, recorded at registration (audits and tests walk it). */
export interface RouteInfo {
  readonly method: string;
  readonly url: string;
  readonly auth: AuthLevel | undefined;
  /** the detail of an `admin` route's 403 for anyone else */
  readonly adminDetail: string | undefined;
  readonly rateLimit: RateLimitBucket | undefined;
  readonly body: unknown;
  /** the most bytes of body the route reads (body-limits.ts) */
  readonly bodyLimit: number | undefined;
}

declare module 'fastify' {
  interface FastifyInstance {
    routeTable: readonly RouteInfo[];
  }
}

/** Server-level limits; Node checks `requestTimeout` every `connectionsCheckingInterval` (30 s by default), so it is tightened. */
export function serverLimits(config: Config) {
  const http: ServerOptions = {
    maxHeaderSize: 16 * 1024,
    // refused in the error shape instead (registerHostRequirement)
    requireHostHeader: false,
    headersTimeout: Math.min(config.requestTimeoutMs, 10000),
    connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(config.requestTimeoutMs / 4))),
  };
  return {
    bodyLimit: config.bodyLimitBytes,
    requestTimeout: config.requestTimeoutMs,
    connectionTimeout: 60000,
    keepAliveTimeout: 72000,
    // during a graceful shutdown a request is served (with `Connection: close`), not Fastify's 503
    return503OnClosing: false,
    http,
  };
}

/** HTTP/1.1 requires Host: refused in the error shape, after the security headers' hooks. */
export function registerHostRequirement(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    if (request.raw.httpVersionMajor === 1 && request.raw.httpVersionMinor >= 1 && request.headers.host === undefined) {
      throw new AppError('BAD_REQUEST', 'Missing Host header');
    }
  });
}

type Path = (string | number)[];

/** Text PostgreSQL can store verbatim: no U+0000, no lone UTF-16 surrogate (which would be altered). */
const storable = (s: string) => !s.includes('\u0000') && s.isWellFormed();

interface Visit {
  value: unknown;
  key: string | number;
  parent: Visit | undefined;
}

function pathOf(visit: Visit): Path {
  const path: Path = [];
  for (let v: Visit | undefined = visit; v; v = v.parent) path.unshift(v.key);
  return path;
}

/** Finds a string PostgreSQL cannot store verbatim in a parsed value, iteratively (a deep body costs no stack). */
function findUnstorable(root: unknown, part: string): Path | undefined {
  const stack: Visit[] = [{ value: root, key: part, parent: undefined }];
  for (let visit = stack.pop(); visit; visit = stack.pop()) {
    const { value } = visit;
    if (typeof value === 'string' ? !storable(value) : Buffer.isBuffer(value) && value.includes(0)) return pathOf(visit);
    if (value === null || typeof value !== 'object' || Buffer.isBuffer(value)) continue;
    for (const [k, v] of Object.entries(value)) {
      const child = { value: v, key: Array.isArray(value) ? Number(k) : k, parent: visit };
      if (!storable(k)) return pathOf(child);
      stack.push(child);
    }
  }
  return undefined;
}

export function registerSecurity(app: FastifyInstance): void {
  const routes: RouteInfo[] = [];
  app.decorate('routeTable', routes);
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      routes.push({
        method: String(method),
        url: route.url,
        auth: route.config?.auth,
        adminDetail: route.config?.adminDetail,
        rateLimit: route.config?.rateLimitBucket,
        body: route.schema?.body,
        bodyLimit: route.bodyLimit,
      });
    }
  });

  // PostgreSQL rejects U+0000 and replaces a lone surrogate: 422. A signed body is left to its handler.
  app.addHook('preValidation', async (request) => {
    const body = request.routeOptions.config.auth === 'signature' ? undefined : request.body;
    const path = findUnstorable(body, 'body') ?? findUnstorable(request.query, 'query') ?? findUnstorable(request.params, 'path');
    if (!path) return;
    const msg = 'NUL characters and unpaired surrogates are not allowed';
    // PATCH /items answers its body's validation errors with 400
    const code = path[0] === 'body' && request.routeOptions.attachValidation ? 'INVALID_INPUT' : 'VALIDATION_ERROR';
    throw new AppError(code, `Validation failed: ${path.join('.')}: ${msg}`, {
      errors: [{ loc: path, msg, type: 'string_nul' }],
    });
  });
}
