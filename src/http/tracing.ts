import { trace } from '@opentelemetry/api';
import type { FastifyInstance } from 'fastify';

/** Names each request's server span after its route template (`http.route`), so spans group by endpoint. */
export function registerTracing(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    const span = trace.getActiveSpan();
    if (!span?.isRecording()) return;
    const route = request.routeOptions.url ?? 'unmatched';
    span.setAttribute('http.route', route);
    span.updateName(`${request.method} ${route}`);
  });
}
