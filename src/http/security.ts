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

/**
 * Server-level resource limits. The whole request must arrive within `requestTimeoutMs` (a
 * slow-drip body is cut off); Node checks that deadline only every `connectionsCheckingInterval`
 * (30 s by default), so the interval is tightened to keep the cut-off close to the limit.
 */
export function serverLimits(config: Config) {
  const http: ServerOptions = {
    maxHeaderSize: 16 * 1024,
    // Node answers an HTTP/1.1 request without Host with a bare 400 of its own; the service refuses
    // it itself, in the error shape (registerHostRequirement below)
    requireHostHeader: false,
    headersTimeout: Math.min(config.requestTimeoutMs, 10000),
    connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(config.requestTimeoutMs / 4))),
  };
  return {
    bodyLimit: config.bodyLimitBytes,
    requestTimeout: config.requestTimeoutMs,
    connectionTimeout: 60000,
    keepAliveTimeout: 72000,
    // During a graceful shutdown, a request that arrives on an open keep-alive connection is served
    // (with `Connection: close`) instead of Fastify's own 503, whose body is not our error shape.
    return503OnClosing: false,
    http,
  };
}

/**
 * HTTP/1.1 requires Host (RFC 9112 §3.2). Node's own refusal of a request without it is a bare 400
 * (turned off in serverLimits); this one is in the error shape, with the security headers, whose
 * hooks must come first.
 */
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

/**
 * Finds a string PostgreSQL cannot store verbatim anywhere in a parsed value. Iterative, and the
 * path is built only for the finding, so a deeply nested body costs linear time and no stack.
 */
function findUnstorable(root: unknown, part: string): Path | undefined {
  const stack: Visit[] = [{ value: root, key: part, parent: undefined }];
  while (stack.length > 0) {
    const visit = stack.pop()!;
    const { value } = visit;
    if (typeof value === 'string') {
      if (!storable(value)) return pathOf(visit);
    } else if (Buffer.isBuffer(value)) {
      if (value.includes(0)) return pathOf(visit);
    } else if (Array.isArray(value)) {
      value.forEach((v, i) => stack.push({ value: v, key: i, parent: visit }));
    } else if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        if (!storable(k)) return pathOf({ value: v, key: k, parent: visit });
        stack.push({ value: v, key: k, parent: visit });
      }
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

  // PostgreSQL rejects U+0000 in text (an error, so a 500) and replaces a lone surrogate (so not the
  // value sent): refuse both as input with 422. A signature-verified body is left to its handler,
  // which checks the signature before anything else.
  app.addHook('preValidation', async (request) => {
    const body = request.routeOptions.config.auth === 'signature' ? undefined : request.body;
    const path = findUnstorable(body, 'body') ?? findUnstorable(request.query, 'query') ?? findUnstorable(request.params, 'path');
    if (!path) return;
    const msg = 'NUL characters and unpaired surrogates are not allowed';
    // a route that answers its body's validation errors with 400 (attachValidation, the specification's
    // PATCH /items) answers this one with 400 too
    const code = path[0] === 'body' && request.routeOptions.attachValidation ? 'INVALID_INPUT' : 'VALIDATION_ERROR';
    throw new AppError(code, `Validation failed: ${path.join('.')}: ${msg}`, {
      errors: [{ loc: path, msg, type: 'string_nul' }],
    });
  });
}
