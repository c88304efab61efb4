import type { FastifyBaseLogger } from 'fastify';
import client from 'prom-client';
import type { Db } from '../../db/database.ts';
import type { JobQueue, QueueJobCounts } from '../../jobs/queue.ts';
import { countInboundWebhooksByStatus } from '../inbound-webhooks/inbound-webhooks.repository.ts';
import { orderStatusTransitions } from '../orders/orders.metrics.ts';
import { countOpenOrders } from '../orders/orders.reads.repository.ts';
import { webhookDeliveryAttempts } from '../outbound-webhooks/outbound-webhooks.metrics.ts';
import { oldestUndeliveredAgeSeconds } from '../outbound-webhooks/trace.repository.ts';

/** The figures the operations metrics show, read from the database in one go. */
async function readSnapshot(db: Db, queue: JobQueue) {
  // a few index-served reads, one after the other: a scrape holds one connection at a time
  const jobs = await queue.counts();
  const openOrders = await countOpenOrders(db);
  const oldestUndeliveredSeconds = await oldestUndeliveredAgeSeconds(db);
  const { received, failed } = await countInboundWebhooksByStatus(db);
  return { jobs, openOrders, oldestUndeliveredSeconds, inbound: { received, failed } };
}
type Snapshot = Awaited<ReturnType<typeof readSnapshot>>;

type Metric = { name: string; help: string; label?: string; values: (s: Snapshot) => Record<string, number> };
const perQueue = (name: string, help: string, pick: (q: QueueJobCounts) => number): Metric => ({
  name,
  help,
  label: 'queue',
  values: (s) => Object.fromEntries(s.jobs.map((q) => [q.queue, pick(q)])),
});

/** Each gauge's one label, if any; `values` maps each of its values to the figure (the key is ignored without a label). */
const METRICS: Metric[] = [
  perQueue('jobs_queued', 'Jobs waiting to run (new, or waiting for their next attempt), per queue', (q) => q.queued),
  perQueue('jobs_active', 'Jobs running now, per queue', (q) => q.active),
  perQueue('jobs_failed', 'Jobs failed for good (every attempt failed, or given up by the queue) and still kept (JOB_RETENTION_DAYS), per queue', (q) => q.failed),
  { name: 'orders_open', help: 'Orders not final yet, by status (pending: waiting for processing; processing)', label: 'status', values: (s) => s.openOrders },
  {
    name: 'webhook_oldest_undelivered_message_age_seconds',
    help: 'Age of the oldest outgoing webhook message not yet delivered (0 when every message is settled)',
    values: (s) => ({ age: s.oldestUndeliveredSeconds }),
  },
  { name: 'inbound_webhooks', help: 'Stored platform webhooks not processed: received (waiting for processing) or failed', label: 'status', values: (s) => s.inbound },
];

/** Gauges read from the database at a scrape, reused for `cacheSeconds` (the last figures when it cannot be read); this process's counters. */
export function registerOperationsMetrics(registry: client.Registry, deps: { db: Db; queue: JobQueue; cacheSeconds: number; log: FastifyBaseLogger }): void {
  // one read serves every metric of a scrape (prom-client collects them at once)
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
    new client.Gauge({
      name: m.name,
      help: m.help,
      labelNames: m.label ? [m.label] : [],
      registers: [registry],
      async collect() {
        const s = await snapshot();
        this.reset();
        if (s) for (const [value, n] of Object.entries(m.values(s))) this.set(m.label ? { [m.label]: value } : {}, n);
      },
    });
  }
}
