/**
 * OpenTelemetry tracing with the official Node.js SDK, exported over OTLP. server.ts imports this
 * module only when OTEL_EXPORTER_OTLP_ENDPOINT is set, and before the app (the instrumentations
 * patch `pg`, `ioredis` and `node:http` as they are loaded, so the SDK must start first); when it
 * is unset, neither the SDK nor any instrumentation is loaded.
 *
 * The SDK reads the standard variables itself: OTEL_EXPORTER_OTLP_PROTOCOL (http/protobuf by
 * default, http/json, grpc), OTEL_EXPORTER_OTLP_HEADERS, OTEL_TRACES_SAMPLER, OTEL_BSP_SCHEDULE_DELAY,
 * OTEL_RESOURCE_ATTRIBUTES, … Only traces are exported: metrics stay on /metrics, logs on stdout.
 *
 * Spans: each HTTP request (server span; its route and status are set by src/http/tracing.ts), each
 * PostgreSQL statement and Redis command made within a request or job (not the job queue's own
 * polling, which has no parent), each job run (src/jobs/queue.ts), and each outgoing HTTP call
 * (webhook deliveries, platform reports) through undici, which also sends the `traceparent` header.
 * PGlite (the embedded database) has no instrumentation: its statements make no spans.
 */
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { NodeSDK } from '@opentelemetry/sdk-node';
import type { Config } from './config.ts';

/** Probes and scrapes: frequent, and of no interest in a trace. */
const UNTRACED_PATHS = new Set(['/health', '/ready', '/metrics']);

export interface Telemetry {
  /** exports the spans still buffered and stops */
  shutdown(): Promise<void>;
}

export function startTelemetry(config: Config): Telemetry {
  const sdk = new NodeSDK({
    serviceName: config.otelServiceName,
    // traces only
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.has((req.url ?? '').split('?')[0]),
      }),
      new UndiciInstrumentation(),
      new PgInstrumentation({ requireParentSpan: true }),
      new IORedisInstrumentation({ requireParentSpan: true }),
    ],
  });
  sdk.start();
  return { shutdown: () => sdk.shutdown() };
}
