import { trace } from '@opentelemetry/api';
import type { FastifyInstance } from 'fastify';

/**
 * Names each request's server span (made by the HTTP instrumentation when tracing is on) after its
 * route, `POST /api/v1/orders/:order_id/retry` rather than the bare method, and records the route
 * template as `http.route`, so spans group by endpoint instead of by URL. The status is set by the
 * instrumentation when the response ends.
 */
export function registerTracing(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    const span = trace.getActiveSpan();
    if (!span?.isRecording()) return;
    const route = request.routeOptions.url ?? 'unmatched';
    span.setAttribute('http.route', route);
    span.updateName(`${request.method} ${route}`);
  });
}
