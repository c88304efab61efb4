/**
 * OpenTelemetry tracing (traces only) over OTLP. server.ts imports this only when an endpoint is set,
 * before the app, as the instrumentations patch `pg`, `ioredis` and `node:http` as they load. The
 * SDK reads the standard OTEL_* variables itself. docs/tracing.md lists the spans.
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

const UNTRACED_PATHS = new Set(['/health', '/ready', '/metrics']);

const EXPORT_FAILURE_LOG_INTERVAL_MS = 60_000;

export interface Telemetry {
  /** reports failed span exports to `log` from now on (the ones before it are counted in its first line) */
  reportTo(log: FastifyBaseLogger): void;
  /** exports the spans still buffered and stops */
  shutdown(): Promise<void>;
}

/** Logs the first span export failure at once, then at most a line a minute with the count since. */
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
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.has((req.url ?? '').split('?')[0]),
      }),
      new UndiciInstrumentation(),
      new PgInstrumentation({
        requireParentSpan: true,
        // a prepared statement's name is a per-process id (`oas_3`): its span is named as an unprepared one's
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
