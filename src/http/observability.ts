import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import client from 'prom-client';
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

/** /health, /ready and /metrics (Prometheus), outside the versioned API and never rate-limited. */
export function registerObservability(app: FastifyInstance, checks: ReadinessCheck[]): client.Registry {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
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

  const config = { auth: 'public' as const, rateLimit: 'none' as const };
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
      response: { 200: ReadyBody, 503: ReadyBody },
    },
    handler: async (_request, reply) => {
      const results: Record<string, string> = {};
      let ready = true;
      let degraded = false;
      await Promise.all(
        checks.map(async (c) => {
          try {
            const state = await Promise.race([
              c.check(),
              new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), 2000).unref()),
            ]);
            results[c.name] = state;
            if (state === 'degraded') degraded = true;
          } catch {
            results[c.name] = c.critical ? 'unavailable' : 'degraded';
            if (c.critical) ready = false;
            else degraded = true;
          }
        }),
      );
      const status = ready ? (degraded ? 'degraded' : 'ok') : 'unavailable';
      return reply.code(ready ? 200 : 503).send({ status, checks: results });
    },
  });

  app.get('/metrics', {
    config,
    schema: {
      tags,
      summary: 'Prometheus metrics',
      response: {
        200: { description: 'Prometheus text exposition format', content: { 'text/plain': { schema: Type.String() } } },
        ...errorResponses(500),
      },
    },
    handler: async (_request, reply) => reply.type(registry.contentType).send(await registry.metrics()),
  });

  return registry;
}
