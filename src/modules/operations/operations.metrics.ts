import type { FastifyBaseLogger } from 'fastify';
import client from 'prom-client';
import type { Db } from '../../db/database.ts';
import type { JobQueue, QueueJobCounts } from '../../jobs/queue.ts';
import { countUnprocessedInboundWebhooks } from '../inbound-webhooks/inbound-webhooks.repository.ts';
import { orderStatusTransitions } from '../orders/orders.metrics.ts';
import { countOpenOrders } from '../orders/orders.reads.repository.ts';
import { webhookDeliveryAttempts } from '../outbound-webhooks/outbound-webhooks.metrics.ts';
import { oldestUndeliveredAgeSeconds } from '../outbound-webhooks/trace.repository.ts';

/** The figures the operations metrics show, read from the database in one go. */
interface Snapshot {
  jobs: QueueJobCounts[];
  openOrders: Record<'pending' | 'processing', number>;
  oldestUndeliveredSeconds: number;
  inbound: Record<'received' | 'failed', number>;
}

async function readSnapshot(db: Db, queue: JobQueue): Promise<Snapshot> {
  // a few index-served reads, one after the other: a scrape holds one connection at a time
  const jobs = await queue.counts();
  const openOrders = await countOpenOrders(db);
  const oldestUndeliveredSeconds = await oldestUndeliveredAgeSeconds(db);
  const inbound = await countUnprocessedInboundWebhooks(db);
  return { jobs, openOrders, oldestUndeliveredSeconds, inbound };
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
    name: 'orders_open',
    help: 'Orders not final yet, by status (pending: waiting for processing; processing)',
    type: 'gauge',
    label: 'status',
    values: (s) => s.openOrders,
  },
  {
    name: 'webhook_oldest_undelivered_message_age_seconds',
    help: 'Age of the oldest outgoing webhook message not yet delivered (0 when every message is settled)',
    type: 'gauge',
    values: (s) => ({ age: s.oldestUndeliveredSeconds }),
  },
  {
    name: 'inbound_webhooks',
    help: 'Stored platform webhooks not processed: received (waiting for processing) or failed',
    type: 'gauge',
    label: 'status',
    values: (s) => s.inbound,
  },
];

/**
 * The jobs, orders and webhooks metrics of /metrics. The gauges are read from the database when
 * /metrics is scraped — pg-boss's own counts of each queue (as its monitor last took them) and
 * counts that an index serves — and reused for `cacheSeconds`, so frequent scrapes (or several
 * Prometheus servers) cost little; any API process reports the same gauges for the whole service.
 * When the database cannot be read, the last figures read are shown again. The counters of order
 * status changes and delivery attempts are this process's own (orders.metrics.ts,
 * outbound-webhooks.metrics.ts).
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

  registry.registerMetric(orderStatusTransitions);
  registry.registerMetric(webhookDeliveryAttempts);
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
