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
 * docs/tracing.md lists them with their names and attributes.
 */
import { setGlobalErrorHandler } from '@opentelemetry/core';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { NodeSDK } from '@opentelemetry/sdk-node';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from './config.ts';
import { tracingStatus } from './telemetry-status.ts';

/** Probes and scrapes: frequent, and of no interest in a trace. */
const UNTRACED_PATHS = new Set(['/health', '/ready', '/metrics']);

/** At most one line per this many ms about failed exports, saying how many failed meanwhile. */
const EXPORT_FAILURE_LOG_INTERVAL_MS = 60_000;

export interface Telemetry {
  /** reports failed span exports to `log` from now on (the ones before it are counted in its first line) */
  reportTo(log: FastifyBaseLogger): void;
  /** exports the spans still buffered and stops */
  shutdown(): Promise<void>;
}

/**
 * Counts the SDK's export failures (the batch span processor hands each to OpenTelemetry's global
 * error handler, which is otherwise silent without a diagnostic logger) and logs the first at once,
 * then at most one line a minute with the count since the last line, so a collector that is down
 * says so without a line per batch.
 */
class ExportFailureLog {
  private log: FastifyBaseLogger | undefined;
  private failures = 0;
  private lastError = '';
  private lastLineAt = -Infinity;
  private timer: NodeJS.Timeout | undefined;
  private readonly endpoint: string;

  constructor(endpoint: string) {
    this.endpoint = endpoint;
  }

  attach(log: FastifyBaseLogger): void {
    this.log = log;
    if (this.failures > 0) this.flush();
  }

  failed(err: unknown): void {
    this.failures++;
    this.lastError = err instanceof Error ? err.message || err.name : String(err);
    if (!this.log || this.timer) return;
    const wait = this.lastLineAt + EXPORT_FAILURE_LOG_INTERVAL_MS - Date.now();
    if (wait <= 0) this.flush();
    else this.timer = setTimeout(() => this.flush(), wait).unref();
  }

  private flush(): void {
    this.timer = undefined;
    if (!this.log || this.failures === 0) return;
    const failures = this.failures;
    this.log.warn(
      { failures, endpoint: this.endpoint, error: this.lastError },
      `tracing: ${failures} span export${failures === 1 ? '' : 's'} to ${this.endpoint} failed since the last report (spans dropped); is the collector up?`,
    );
    this.failures = 0;
    this.lastLineAt = Date.now();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.flush();
  }
}

export function startTelemetry(config: Config): Telemetry {
  const status = tracingStatus(config);
  const failures = new ExportFailureLog(status.endpoint ?? (status.exporters ?? []).join(','));
  setGlobalErrorHandler((err) => failures.failed(err));
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
      new PgInstrumentation({
        requireParentSpan: true,
        // The instrumentation names a statement `pg.query:<name or operation> <database>`. A
        // prepared statement's name is an id each process assigns (`oas_3`, db/named-statements.ts),
        // so its span gets the name an unprepared one gets: the statement's first word, as the
        // instrumentation's `db.operation.name` (`pg.query:SELECT oas`); `db.query.text` has the rest.
        requestHook: (span, { query, connection }) => {
          if (query.name === undefined) return;
          const operation = query.text.trimStart().split(/\s/, 1)[0].toUpperCase();
          span.updateName(`pg.query:${operation}${connection.database ? ` ${connection.database}` : ''}`);
        },
      }),
      new IORedisInstrumentation({ requireParentSpan: true }),
    ],
  });
  sdk.start();
  return {
    reportTo: (log) => failures.attach(log),
    shutdown: async () => {
      await sdk.shutdown();
      failures.stop();
    },
  };
}
