// OpenTelemetry over OTLP (docs/tracing.md), loaded only with an endpoint, before the app: it patches libraries as they load.
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

export function startTelemetry(config: Config) {
  const status = tracingStatus(config);
  const endpoint = status.endpoint ?? (status.exporters ?? []).join(',');
  // a failed span export is logged at once, then at most a line a minute with the count since
  let log: FastifyBaseLogger | undefined;
  let failures = 0;
  let lastError = '';
  let lastLineAt = -Infinity;
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    timer = undefined;
    if (!log || failures === 0) return;
    log.warn(
      { failures, endpoint, error: lastError },
      `tracing: ${failures} span export${failures === 1 ? '' : 's'} to ${endpoint} failed since the last report (spans dropped); is the collector up?`,
    );
    failures = 0;
    lastLineAt = Date.now();
  };
  setGlobalErrorHandler((err) => {
    failures++;
    lastError = err instanceof Error ? err.message || err.name : String(err);
    if (!log || timer) return;
    const wait = lastLineAt + EXPORT_FAILURE_LOG_INTERVAL_MS - Date.now();
    if (wait <= 0) flush();
    else timer = setTimeout(flush, wait).unref();
  });
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
    /** reports failed span exports to `to` from now on (the ones before it are counted in its first line) */
    reportTo(to: FastifyBaseLogger): void {
      log = to;
      flush();
    },
    /** exports the spans still buffered and stops */
    async shutdown(): Promise<void> {
      await sdk.shutdown();
      clearTimeout(timer);
      flush();
    },
  };
}
