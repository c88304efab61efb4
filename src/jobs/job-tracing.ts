import { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, propagation, trace, type Span } from '@opentelemetry/api';
import type { JobWithMetadata } from 'pg-boss';

/**
 * The field of a job's data that carries the W3C trace context (`traceparent`, `tracestate`) of
 * the request or job that sent it, so the job's run continues that trace in whichever process
 * runs it. Present only when tracing is on (src/telemetry.ts); handlers never read it.
 */
export const TRACE_CONTEXT_FIELD = 'traceContext';

const tracer = trace.getTracer('order-account-service/jobs');

/** `data` with the current trace context added; `data` itself when there is none (tracing off). */
export function withTraceContext<T>(data: T): T {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ? { ...data, [TRACE_CONTEXT_FIELD]: carrier } : data;
}

/** The trace context a job was sent with (the root context when it carries none). */
function traceContextOf(data: unknown) {
  const carrier = data !== null && typeof data === 'object' ? (data as Record<string, unknown>)[TRACE_CONTEXT_FIELD] : undefined;
  return carrier !== null && typeof carrier === 'object' ? propagation.extract(ROOT_CONTEXT, carrier) : ROOT_CONTEXT;
}

/** The span attributes of one attempt of `job`, a job of queue `name`. */
function jobSpanAttributes(name: string, job: JobWithMetadata<unknown>) {
  return {
    'messaging.system': 'pg-boss',
    'messaging.operation.type': 'process',
    'messaging.destination.name': name,
    'messaging.message.id': job.id,
    'job.queue': name,
    'job.attempt': job.retryCount + 1,
  };
}

/** Runs `fn`, records its throw on `span` (and rethrows it), and ends the span. */
async function runInSpan(span: Span, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    span.recordException(err instanceof Error ? err : String(err));
    span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
    throw err;
  } finally {
    span.end();
  }
}

/**
 * Runs `fn` for one attempt of `job` in a span of its own, a child of the span that sent the job
 * when tracing is on; a throw is recorded on the span and rethrown.
 */
export function inJobSpan(name: string, job: JobWithMetadata<unknown>, fn: () => Promise<void>): Promise<void> {
  const options = { kind: SpanKind.CONSUMER, attributes: jobSpanAttributes(name, job) };
  return tracer.startActiveSpan(`process ${name}`, options, traceContextOf(job.data), (span) => runInSpan(span, fn));
}

/**
 * Runs `fn` for a batch of jobs run together in one span, linked to the span that sent each job
 * (OpenTelemetry's convention for a batch with many parents).
 */
export function inBatchSpan(name: string, jobs: readonly JobWithMetadata<unknown>[], fn: () => Promise<void>): Promise<void> {
  const links = jobs.flatMap((job) => {
    const parent = trace.getSpanContext(traceContextOf(job.data));
    return parent ? [{ context: parent }] : [];
  });
  const attributes = { 'messaging.system': 'pg-boss', 'messaging.operation.type': 'process', 'messaging.destination.name': name, 'messaging.batch.message_count': jobs.length };
  return tracer.startActiveSpan(`process ${name}`, { kind: SpanKind.CONSUMER, attributes, links }, (span) => runInSpan(span, fn));
}
