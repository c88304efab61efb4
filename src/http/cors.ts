import type { FastifyCorsOptions } from '@fastify/cors';

/** CORS for the browser applications at `origins`, exposing the rate-limit headers; no cookies, so no credentials. */
export function corsOptions(origins: readonly string[]): FastifyCorsOptions {
  return {
    origin: [...origins],
    credentials: false,
    methods: ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE', 'OPTIONS'],
    allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'X-Request-Id'],
    exposedHeaders: ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'Retry-After'],
    maxAge: 600,
  };
}
