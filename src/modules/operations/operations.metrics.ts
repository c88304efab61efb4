import type { FastifyBaseLogger } from 'fastify';
import client from 'prom-client';
import type { Db } from '../../db/database.ts';
import type { InboundWebhookStatus, OrderStatus } from '../../db/schema.ts';
import type { JobQueue, QueueJobCounts } from '../../jobs/queue.ts';
import { countInboundWebhooksByStatus } from '../inbound-webhooks/inbound-webhooks.repository.ts';
import { countTransitionsByStatus } from '../orders/orders.reads.repository.ts';
import { countDeliveryAttempts, oldestUndeliveredAgeSeconds } from '../outbound-webhooks/trace.repository.ts';

/** The figures the operations metrics show, read from the database in one go. */
interface Snapshot {
  jobs: QueueJobCounts[];
  transitions: Record<OrderStatus, number>;
  deliveries: { success: number; failure: number };
  oldestUndeliveredSeconds: number;
  inbound: Record<InboundWebhookStatus, number>;
}

async function readSnapshot(db: Db, queue: JobQueue): Promise<Snapshot> {
  // a few counter reads, one after the other: a scrape holds one connection at a time
  const jobs = await queue.counts();
  const transitions = await countTransitionsByStatus(db);
  const deliveries = await countDeliveryAttempts(db);
  const oldestUndeliveredSeconds = await oldestUndeliveredAgeSeconds(db);
  const inbound = await countInboundWebhooksByStatus(db);
  return { jobs, transitions, deliveries, oldestUndeliveredSeconds, inbound };
}

interface MetricDefinition {
  name: string;
  help: string;
  /** counters are read as running totals (never lower), gauges as the state now */
  type: 'gauge' | 'counter';
  /** the one label, if any; `values` maps each of its values to the figure (the key is ignored without a label) */
  label?: string;
  values: (s: Snapshot) => Record<string, number>;
}

const perQueue = (s: Snapshot, pick: (q: QueueJobCounts) => number) => Object.fromEntries(s.jobs.map((q) => [q.queue, pick(q)]));

const METRICS: MetricDefinition[] = [
  {
    name: 'jobs_queued',
    help: 'Jobs waiting to run (new, or waiting for their next attempt), per queue',
    type: 'gauge',
    label: 'queue',
    values: (s) => perQueue(s, (q) => q.queued),
  },
  { name: 'jobs_active', help: 'Jobs running now, per queue', type: 'gauge', label: 'queue', values: (s) => perQueue(s, (q) => q.active) },
  {
    name: 'jobs_failed',
    help: 'Jobs failed for good (every attempt failed, or given up by the queue) and still kept (JOB_RETENTION_DAYS), per queue',
    type: 'gauge',
    label: 'queue',
    values: (s) => perQueue(s, (q) => q.failed),
  },
  {
    name: 'order_status_transitions_total',
    help: 'Order events by the status the order moved to (pending: created, or queued again by a retry)',
    type: 'counter',
    label: 'status',
    values: (s) => s.transitions,
  },
  {
    name: 'webhook_deliveries_total',
    help: 'Outgoing webhook delivery attempts by result (success: a 2xx answer; failure: any other answer or none)',
    type: 'counter',
    label: 'result',
    values: (s) => s.deliveries,
  },
  {
    name: 'webhook_oldest_undelivered_message_age_seconds',
    help: 'Age of the oldest outgoing webhook message not yet delivered (0 when every message is settled)',
    type: 'gauge',
    values: (s) => ({ age: s.oldestUndeliveredSeconds }),
  },
  {
    name: 'inbound_webhooks',
    help: 'Stored platform webhooks by result (received: not processed yet; processed; failed)',
    type: 'gauge',
    label: 'status',
    values: (s) => s.inbound,
  },
];

/**
 * The jobs, orders and webhooks metrics of /metrics. Worker processes serve no HTTP, so nothing is
 * counted in process memory: every figure is read from the database when /metrics is scraped —
 * counters kept by triggers, and pg-boss's own counts of each queue (as its monitor last took
 * them), each a read of a few rows — and reused
 * for `cacheSeconds`, so frequent scrapes (or several Prometheus servers) cost little. Any API
 * process reports the same figures for the whole service. When the database cannot be read, the
 * last figures read are shown again (the request metrics are served either way).
 */
export function registerOperationsMetrics(registry: client.Registry, deps: { db: Db; queue: JobQueue; cacheSeconds: number; log: FastifyBaseLogger }): void {
  // one read serves every metric of a scrape (prom-client collects them at once), and later scrapes
  // for `cacheSeconds`; a failed read is logged once and the last figures are shown meanwhile
  let cached: { at: number; done: boolean; value: Promise<Snapshot | undefined> } | undefined;
  let lastGood: Snapshot | undefined;
  const snapshot = (): Promise<Snapshot | undefined> => {
    const now = Date.now();
    if (cached && (!cached.done || now - cached.at < deps.cacheSeconds * 1000)) return cached.value;
    const entry = {
      at: now,
      done: false,
      value: readSnapshot(deps.db, deps.queue).then(
        (s) => (lastGood = s),
        (err: unknown) => {
          deps.log.warn({ err }, 'operations metrics: the database could not be read; showing the last figures');
          return lastGood;
        },
      ),
    };
    void entry.value.finally(() => (entry.done = true));
    cached = entry;
    return entry.value;
  };

  for (const m of METRICS) {
    const common = {
      name: m.name,
      help: m.help,
      labelNames: m.label ? [m.label] : [],
      registers: [registry],
    };
    const values = async (): Promise<[Record<string, string>, number][]> => {
      const s = await snapshot();
      if (!s) return [];
      return Object.entries(m.values(s)).map(([value, n]) => [m.label ? { [m.label]: value } : {}, n]);
    };
    if (m.type === 'gauge') {
      new client.Gauge({
        ...common,
        async collect() {
          const samples = await values();
          this.reset();
          for (const [labels, n] of samples) this.set(labels, n);
        },
      });
    } else {
      new client.Counter({
        ...common,
        async collect() {
          const samples = await values();
          this.reset();
          for (const [labels, n] of samples) this.inc(labels, n);
        },
      });
    }
  }
}
