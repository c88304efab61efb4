import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, context, isSpanContextValid, propagation, trace, type Link, type Span } from '@opentelemetry/api';
import type { JobWithMetadata } from 'pg-boss';

/**
 * The field of a job's data that carries the W3C trace context (`traceparent`, `tracestate`) of
 * the request or job that sent it, so the job's run continues that trace in whichever process
 * runs it, or the stored context the job continues (`withTraceContext`'s `parent`). Absent when
 * there is neither (tracing off, src/telemetry.ts); handlers never read it.
 */
export const TRACE_CONTEXT_FIELD = 'traceContext';

/**
 * The field of a job's data that carries the trace context of the span that sent the job when the
 * job continues another trace (`TRACE_CONTEXT_FIELD` holds that one): its run links to the sender.
 */
const TRACE_LINK_FIELD = 'traceLink';

const tracer = trace.getTracer('order-account-service/jobs');

function activeCarrier(): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}

/**
 * The W3C `traceparent` of the active span when it is sampled (so a tracing back end has its
 * trace), to be stored with what the span causes later; null when there is none (tracing off).
 */
export function activeTraceparent(): string | null {
  const span = trace.getSpanContext(context.active());
  if (!span || !isSpanContextValid(span) || (span.traceFlags & TraceFlags.SAMPLED) === 0) return null;
  return activeCarrier().traceparent ?? null;
}

/** The trace id (32 hex digits) of a `traceparent`; null for null. */
export function traceIdOf(traceparent: string | null): string | null {
  return traceparent?.split('-')[1] ?? null;
}

/**
 * `data` with the trace context its job's run continues: the current one, or `parent` (a stored
 * `traceparent`) when given, and then the current span becomes a link of the run (a retry or the
 * next message of a lane belongs to the trace of the event that caused it, not to the delivery
 * that sent it). `data` itself when there is no context (tracing off).
 */
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

/** The span that sent a job continuing another trace, as a link; none otherwise. */
function linksOf(data: unknown): Link[] {
  const sender = trace.getSpanContext(traceContextOf(data, TRACE_LINK_FIELD));
  return sender ? [{ context: sender }] : [];
}

/**
 * The span attributes of one attempt of `job`, a job of queue `name`; `attempt` counts the attempts
 * of the work itself when the queue counts them (a delivery's each retry is a job of its own), else
 * pg-boss's retries of the job.
 */
function jobSpanAttributes(name: string, job: JobWithMetadata<unknown>, attempt: number) {
  return {
    'messaging.system': 'pg-boss',
    'messaging.operation.type': 'process',
    'messaging.destination.name': name,
    'messaging.message.id': job.id,
    'job.queue': name,
    'job.attempt': attempt,
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
 * (or of the trace context it was sent to continue) when tracing is on; a throw is recorded on the
 * span and rethrown. `attempt` is the attempt to report, pg-boss's own count by default.
 */
export function inJobSpan(name: string, job: JobWithMetadata<unknown>, fn: () => Promise<void>, attempt = job.retryCount + 1): Promise<void> {
  const options = { kind: SpanKind.CONSUMER, attributes: jobSpanAttributes(name, job, attempt), links: linksOf(job.data) };
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
