import crypto from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import client from 'prom-client';
import { StorageFull } from '../db/errors.ts';
import { notAuthenticated } from './auth.ts';
import { errorResponses } from './errors.ts';

export interface ReadinessCheck {
  name: string;
  /** a degraded dependency is reported but does not make the service unready */
  critical: boolean;
  check(): Promise<'ok' | 'degraded'>;
}

const ReadyBody = Type.Object({
  status: Type.String(),
  checks: Type.Record(Type.String(), Type.String()),
});

const digest = (text: string) => crypto.createHash('sha256').update(text).digest();

/** Requires `Authorization: Bearer <token>`, both sides hashed so the comparison takes constant time. */
function bearerCheck(token: string): (request: FastifyRequest) => void {
  const expected = digest(token);
  return (request) => {
    const match = /^Bearer[ ]+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
    if (!match || !crypto.timingSafeEqual(digest(match[1]), expected)) throw notAuthenticated();
  };
}

/** /health, /ready and /metrics, outside the versioned API and never rate-limited. */
export function registerObservability(app: FastifyInstance, checks: ReadinessCheck[], opts: { metricsToken?: string } = {}): client.Registry {
  const registry = new client.Registry();
  // prom-client's 10 ms event-loop sampling would wake an idle process 100 times a second
  client.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 });
  const duration = new client.Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by route and status',
    labelNames: ['method', 'route', 'status_code'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });

  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    duration.observe({ method: request.method, route, status_code: String(reply.statusCode) }, reply.elapsedTime / 1000);
  });

  const config = { auth: 'public' as const, rateLimitBucket: 'none' as const };
  const tags = ['operations'];

  app.get('/health', {
    config,
    schema: { tags, summary: 'Liveness: the process is up', response: { 200: Type.Object({ status: Type.String() }) } },
    handler: async () => ({ status: 'ok' }),
  });

  app.get('/ready', {
    config,
    schema: {
      tags,
      summary: 'Readiness: database, job queue and (if configured) Redis are reachable',
      response: {
        200: { ...ReadyBody, description: 'Ready (`ok`), or ready without Redis (`degraded`: rate limits count per process)' },
        503: {
          ...ReadyBody,
          description: 'Not ready: the database or the job queue is unreachable (`unavailable`), or the database\'s disk is full (`disk full`); `checks` says which',
        },
      },
    },
    handler: async (_request, reply) => {
      const results: Record<string, string> = {};
      let ready = true;
      let degraded = false;
      await Promise.all(
        checks.map(async (c) => {
          const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), 2000).unref());
          // a full disk is named: the database answers, but cannot store anything
          const state = await Promise.race([c.check(), timeout]).catch((err: unknown) => {
            if (c.critical) ready = false;
            else degraded = true;
            return err instanceof StorageFull ? 'disk full' : c.critical ? 'unavailable' : 'degraded';
          });
          results[c.name] = state;
          if (state === 'degraded') degraded = true;
        }),
      );
      const status = ready ? (degraded ? 'degraded' : 'ok') : 'unavailable';
      return reply.code(ready ? 200 : 503).send({ status, checks: results });
    },
  });

  const authorize = opts.metricsToken === undefined ? undefined : bearerCheck(opts.metricsToken);
  app.get('/metrics', {
    config,
    schema: {
      tags,
      summary: 'Prometheus metrics',
      description: 'When the service is configured with METRICS_TOKEN, only with `Authorization: Bearer <METRICS_TOKEN>` (401 otherwise).',
      response: {
        200: { description: 'Prometheus text exposition format', content: { 'text/plain': { schema: Type.String() } } },
        ...errorResponses(401, 500),
      },
    },
    onRequest: authorize ? async (request) => authorize(request) : undefined,
    handler: async (_request, reply) => reply.type(registry.contentType).send(await registry.metrics()),
  });

  return registry;
}
