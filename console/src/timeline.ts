/**
 * An order's story as one list in time order: the platform webhooks that created it, its events
 * (each status change with its reason), the jobs run for it and every outgoing delivery attempt.
 */
import { label, plural, reasonText } from './format.ts';
import type { OrderDetail, OrderEvent, OrderTrace } from './types.ts';

export interface Entry {
  /** ISO 8601 */
  at: string;
  kind: 'webhook' | 'event' | 'job' | 'delivery';
  title: string;
  lines: Line[];
  tone?: 'good' | 'bad';
}

/** A line of an entry: words, or words and moments (each shown as "5 minutes ago", its exact time on hover). */
export type Line = string | (string | { at: string })[];

type Items = OrderDetail['items'];

/** A product's name as the order's lines recorded it. */
function nameOf(items: Items, productId: number): string {
  return items.find((i) => i.product_id === productId)?.product_name ?? `product ${productId}`;
}

export function eventEntry(e: OrderEvent, items: Items): Entry {
  if (e.type === 'order.created' || e.previous_status === null) {
    return { at: e.created_at, kind: 'event', title: `Order created (${e.status})`, lines: [] };
  }
  const lines: string[] = [];
  if (e.status === 'failed') {
    lines.push(`Reason: ${reasonText(e.reason)}`);
    for (const l of e.details?.lines ?? []) lines.push(`${nameOf(items, l.product_id)}: wanted ${l.requested}, available ${l.available}`);
  }
  if (e.status === 'cancelled') lines.push(e.reason ? `Reason given: ${e.reason}` : 'No reason given');
  const tone = e.status === 'failed' || e.status === 'cancelled' ? 'bad' : e.status === 'completed' ? 'good' : undefined;
  return { at: e.created_at, kind: 'event', title: `Status changed: ${e.previous_status} → ${e.status}`, lines, tone };
}

const QUEUES: Record<string, string> = {
  'order-process': 'Order processing',
  'webhook-inbound-process': 'Platform webhook processing',
  'webhook-deliver': 'Webhook delivery',
  'webhook-platform-report': 'Report to the platform',
};

function queueName(queue: string): string {
  const dead = queue.endsWith('-dead-letter');
  const base = dead ? queue.slice(0, -'-dead-letter'.length) : queue;
  return `${QUEUES[base] ?? label(base)}${dead ? ' (dead letter)' : ''}`;
}

function jobEntry(j: OrderTrace['jobs'][number]): Entry {
  const lines: Line[] = [`${plural(j.attempt_count, 'attempt')}, ${j.state}`];
  if (j.started_at) lines.push(['Started ', { at: j.started_at }, ...(j.finished_at ? [', finished ', { at: j.finished_at }] : [])]);
  if (j.last_error) lines.push(`Last error: ${j.last_error}`);
  const tone = j.state === 'completed' ? 'good' : j.state === 'failed' ? 'bad' : undefined;
  return { at: j.created_at, kind: 'job', title: `Job: ${queueName(j.queue)}`, lines, tone };
}

function inboundEntries(w: OrderTrace['inbound'][number]): Entry[] {
  const received: Entry = {
    at: w.received_at,
    kind: 'webhook',
    title: `Platform webhook received: ${w.topic ?? 'unknown topic'}`,
    lines: [`Webhook ${w.webhook_id}${w.shop_domain ? ` from ${w.shop_domain}` : ''}`],
  };
  if (!w.processed_at) return [received];
  const failed = w.status === 'failed';
  const outcome: Entry = {
    at: w.processed_at,
    kind: 'webhook',
    title: `Platform webhook ${failed ? 'failed' : 'processed'}`,
    lines: failed && w.error ? [`Error: ${w.error}`] : [],
    tone: failed ? 'bad' : 'good',
  };
  return [received, outcome];
}

function attemptLine(a: OrderTrace['deliveries'][number]['messages'][number]['attempts'][number]): string {
  const answer = a.status_code === null ? 'no answer' : `HTTP ${a.status_code}`;
  const duration = a.duration_ms === null ? '' : ` in ${a.duration_ms} ms`;
  return `Attempt ${a.attempt}: ${answer}${duration}${a.success ? '' : a.error ? ` — ${a.error}` : ' — failed'}`;
}

function deliveryEntries(t: OrderTrace): Entry[] {
  const eventTime = new Map(t.events.map((e) => [e.sequence, e.created_at]));
  return t.deliveries.flatMap((d) =>
    d.messages.map((m): Entry => {
      const first = m.attempts[0]?.attempted_at;
      const about = m.sequence === null ? m.event_type : `${m.event_type} (event ${m.sequence})`;
      return {
        at: first ?? (m.sequence === null ? undefined : eventTime.get(m.sequence)) ?? t.order.updated_at,
        kind: 'delivery',
        title: `Delivery of ${about} to ${d.url}: ${m.status}`,
        lines: m.attempts.map(attemptLine),
        tone: m.status === 'delivered' ? 'good' : m.status === 'failed' ? 'bad' : undefined,
      };
    }),
  );
}

const KIND_ORDER: Entry['kind'][] = ['webhook', 'event', 'job', 'delivery'];

/** Entries oldest first; at the same moment a webhook comes before the event it caused, and so on. */
export function inTimeOrder(entries: Entry[]): Entry[] {
  return entries
    .map((e, i) => ({ e, i }))
    .sort((a, b) => a.e.at.localeCompare(b.e.at) || KIND_ORDER.indexOf(a.e.kind) - KIND_ORDER.indexOf(b.e.kind) || a.i - b.i)
    .map(({ e }) => e);
}

/** The staff's timeline: everything the trace holds. */
export function traceTimeline(t: OrderTrace): Entry[] {
  return inTimeOrder([
    ...t.inbound.flatMap(inboundEntries),
    ...t.events.map((e) => eventEntry(e, t.order.items)),
    ...t.jobs.map(jobEntry),
    ...deliveryEntries(t),
  ]);
}

/** The owner's timeline: the order's own events. */
export function eventTimeline(events: OrderEvent[], items: Items): Entry[] {
  return inTimeOrder(events.map((e) => eventEntry(e, items)));
}
