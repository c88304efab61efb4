import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, context, isSpanContextValid, propagation, trace, type Link, type Span } from '@opentelemetry/api';
import type { JobWithMetadata } from 'pg-boss';

/** The field of a job's data with the W3C trace context its run continues (the sender's, or a stored one). */
const TRACE_CONTEXT_FIELD = 'traceContext';

/** The sender's trace context when the job continues another trace: its run links to it. */
const TRACE_LINK_FIELD = 'traceLink';

const tracer = trace.getTracer('order-account-service/jobs');

function activeCarrier(): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}

/** The W3C `traceparent` of the active span when sampled, to store with what it causes later; else null. */
export function activeTraceparent(): string | null {
  const span = trace.getSpanContext(context.active());
  if (!span || !isSpanContextValid(span) || (span.traceFlags & TraceFlags.SAMPLED) === 0) return null;
  return activeCarrier().traceparent ?? null;
}

/** The trace id (32 hex digits) of a `traceparent`; null for null. */
export function traceIdOf(traceparent: string | null): string | null {
  return traceparent?.split('-')[1] ?? null;
}

/** `data` with the trace context its run continues: the current one, or `parent` (a stored traceparent: a retry joins its event's trace) linked to the current span. */
export function withTraceContext<T>(data: T, parent?: string | null): T {
  const current = activeCarrier();
  if (parent) return { ...data, [TRACE_CONTEXT_FIELD]: { traceparent: parent }, ...(current.traceparent ? { [TRACE_LINK_FIELD]: current } : {}) };
  return current.traceparent ? { ...data, [TRACE_CONTEXT_FIELD]: current } : data;
}

/** The trace context a job was sent with, from `field` of its data (the root context when it carries none). */
function traceContextOf(data: unknown, field = TRACE_CONTEXT_FIELD) {
  const carrier = data !== null && typeof data === 'object' ? (data as Record<string, unknown>)[field] : undefined;
  return carrier !== null && typeof carrier === 'object' ? propagation.extract(ROOT_CONTEXT, carrier) : ROOT_CONTEXT;
}

/** The span whose context `field` of a job's data carries, as a link; none when it carries none. */
function linkTo(data: unknown, field: string): Link[] {
  const span = trace.getSpanContext(traceContextOf(data, field));
  return span ? [{ context: span }] : [];
}

const processAttributes = (name: string) => ({ 'messaging.system': 'pg-boss', 'messaging.operation.type': 'process', 'messaging.destination.name': name });

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

/** Runs one attempt of `job` in its own span, a child of the context it was sent with; `attempt` defaults to pg-boss's count. */
export function inJobSpan(name: string, job: JobWithMetadata<unknown>, fn: () => Promise<void>, attempt = job.retryCount + 1): Promise<void> {
  const attributes = { ...processAttributes(name), 'messaging.message.id': job.id, 'job.queue': name, 'job.attempt': attempt };
  const options = { kind: SpanKind.CONSUMER, attributes, links: linkTo(job.data, TRACE_LINK_FIELD) };
  return tracer.startActiveSpan(`process ${name}`, options, traceContextOf(job.data), (span) => runInSpan(span, fn));
}

/** Runs a batch of jobs in one span, linked to each job's sender (OpenTelemetry's convention for many parents). */
export function inBatchSpan(name: string, jobs: readonly JobWithMetadata<unknown>[], fn: () => Promise<void>): Promise<void> {
  const links = jobs.flatMap((job) => linkTo(job.data, TRACE_CONTEXT_FIELD));
  const attributes = { ...processAttributes(name), 'messaging.batch.message_count': jobs.length };
  return tracer.startActiveSpan(`process ${name}`, { kind: SpanKind.CONSUMER, attributes, links }, (span) => runInSpan(span, fn));
}
