import type { FastifyCorsOptions } from '@fastify/cors';

/**
 * CORS for the browser applications at `origins`: the methods the API uses, the request headers it
 * reads, and the response headers a client needs to pace itself (the rate-limit figures and the
 * 429's Retry-After), which a browser hides from scripts unless they are exposed. No credentials:
 * the API authenticates with a bearer token, never a cookie.
 */
export function corsOptions(origins: readonly string[]): FastifyCorsOptions {
  return {
    origin: [...origins],
    credentials: false,
    methods: ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE', 'OPTIONS'],
    allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'X-Request-Id'],
    exposedHeaders: ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'Retry-After'],
    // a browser may reuse a preflight answer for ten minutes
    maxAge: 600,
  };
}
