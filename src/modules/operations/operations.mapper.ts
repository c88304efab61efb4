import type { JobWithMetadata } from 'pg-boss';
import type { ApiVersion } from '../../http/api-version.ts';
import { iso, isoOrNull } from '../../http/common.schemas.ts';
import { traceIdOf } from '../../jobs/job-tracing.ts';
import { jobFailureMessage } from '../../jobs/queue.ts';
import { toInboundWebhookSummary } from '../inbound-webhooks/inbound-webhooks.mapper.ts';
import { toAdminOrderDetail, toOrderEvent } from '../orders/orders.mapper.ts';
import type { OrderTrace } from './trace.service.ts';

function toTraceJob(j: JobWithMetadata<unknown>) {
  return {
    id: j.id,
    queue: j.name,
    state: j.state,
    // pg-boss counts retries from the second attempt on; a job not started yet has made none
    attempt_count: j.startedOn ? j.retryCount + 1 : 0,
    created_at: iso(j.createdOn),
    started_at: isoOrNull(j.startedOn),
    finished_at: isoOrNull(j.completedOn),
    last_error: j.state === 'completed' ? null : (jobFailureMessage(j.output) ?? null),
  };
}

/** Messages grouped by subscription (in the order each subscription first got one), each with its attempts. */
function deliveries(version: ApiVersion, t: OrderTrace) {
  const sequences = new Map(t.record.events.map((e) => [e.id, e.sequence]));
  const attemptsOf = Map.groupBy(t.attempts, (a) => a.message_id);
  return [...Map.groupBy(t.messages, (m) => m.subscription_id).values()].map((messages) => ({
    subscription_id: messages[0].subscription_id,
    url: messages[0].url,
    messages: messages.map((m) => ({
      message_id: m.message_id,
      event_type: m.event_type,
      sequence: m.event_id === null ? null : (sequences.get(m.event_id) ?? null),
      // v2 names both pending states as the delivery log does; v1 keeps its own names (operations.schemas.ts)
      status: version === 'v2' && (m.status === 'held' || m.status === 'queued') ? ('pending' as const) : m.status,
      trace_id: traceIdOf(m.traceparent),
      attempts: (attemptsOf.get(m.message_id) ?? []).map((a) => ({
        attempt: a.attempt,
        attempted_at: iso(a.created_at),
        status_code: a.status_code,
        duration_ms: a.duration_ms,
        success: a.success,
        error: a.error,
      })),
    })),
  }));
}

export function toOrderTrace(version: ApiVersion, t: OrderTrace) {
  const { order, lines, events } = t.record;
  return {
    order: toAdminOrderDetail(version, order, lines, events),
    trace_id: order.trace_id,
    inbound: t.inbound.map(toInboundWebhookSummary),
    events: events.map((e) => toOrderEvent(version, e)),
    jobs: t.jobs.map(toTraceJob),
    deliveries: deliveries(version, t),
  };
}
