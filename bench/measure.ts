/**
 * Measurements beside the load: the job backlog and its drain, the orders' created → final latency,
 * the service's main queries timed from a connection of their own, query plans, and the API
 * process's memory.
 */
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { elapsed, log, type RunContext } from './context.ts';
import type { Target } from './report.ts';
import { deadlockCounts } from './services.ts';
import type { Session } from './sessions.ts';
import { summarise } from './stats.ts';
import type { LoadSummary } from './types.ts';

export async function maxId(client: pg.Client, table: string): Promise<number> {
  const { rows } = await client.query<{ m: number | null }>(`SELECT max(id) AS m FROM ${table}`);
  return Number(rows[0].m ?? 0);
}

export interface Drain {
  ms: number;
  unfinishedOrders: number;
  unprocessedWebhooks: number;
  /** orders that reached a final state during the drain, per second */
  finalisedPerSecond: number;
}

/** Waits until no order after `sinceOrder` is pending/processing and no webhook after `sinceInbound` is unprocessed. */
export async function drain(client: pg.Client, sinceOrder: number, sinceInbound: number, timeoutMs: number): Promise<Drain> {
  const t0 = Date.now();
  const count = async () => {
    const { rows } = await client.query<{ o: number; w: number }>(
      `SELECT (SELECT count(*)::int FROM orders WHERE id > $1 AND status IN ('pending', 'processing')) AS o,
              (SELECT count(*)::int FROM inbound_webhooks WHERE id > $2 AND status = 'received') AS w`,
      [sinceOrder, sinceInbound],
    );
    return { o: Number(rows[0].o), w: Number(rows[0].w) };
  };
  const first = await count();
  let last = first;
  while ((last.o > 0 || last.w > 0) && Date.now() - t0 < timeoutMs) {
    await sleep(200);
    last = await count();
  }
  const ms = Date.now() - t0;
  const finalised = first.o - last.o;
  return {
    ms,
    unfinishedOrders: last.o,
    unprocessedWebhooks: last.w,
    finalisedPerSecond: ms > 0 && finalised > 0 ? (finalised * 1000) / ms : NaN,
  };
}

/** created → final latency of the orders after `sinceOrder` (updated_at is written by the final transition). */
export async function backgroundLatency(client: pg.Client, sinceOrder: number): Promise<{ orders: number; latency: LoadSummary; failed: number }> {
  const { rows } = await client.query<{ ms: number; status: string }>(
    `SELECT extract(epoch FROM (updated_at - created_at)) * 1000 AS ms, status
     FROM orders WHERE id > $1 AND status IN ('completed', 'failed')`,
    [sinceOrder],
  );
  return {
    orders: rows.length,
    latency: summarise(rows.map((r) => Number(r.ms))),
    failed: rows.filter((r) => r.status === 'failed').length,
  };
}

/** The service's main queries, as it sends them, timed one at a time from a separate connection. */
const QUERIES: Record<string, { text: string; params: (userId: number, orderId: number) => unknown[] }> = {
  'user by id': { text: 'SELECT * FROM users WHERE id = $1 AND deleted_at IS NULL', params: (u) => [u] },
  'order by id': { text: 'SELECT * FROM orders WHERE id = $1', params: (_u, o) => [o] },
  'order lines': {
    text:
      'SELECT oi.id, oi.product_id, oi.quantity, oi.unit_price, coalesce(oi.product_name, p.name) AS product_name ' +
      'FROM order_items oi JOIN products p ON p.id = oi.product_id WHERE oi.order_id = $1 ORDER BY oi.id',
    params: (_u, o) => [o],
  },
  'orders page': { text: 'SELECT * FROM orders WHERE user_id = $1 ORDER BY created_at DESC, id DESC LIMIT 20 OFFSET 0', params: (u) => [u] },
  // a list's total comes from a count an index serves (issue 53: no counter tables)
  'orders count': { text: 'SELECT count(*) FROM orders WHERE user_id = $1', params: (u) => [u] },
  'items page': { text: 'SELECT * FROM items WHERE user_id = $1 AND deleted_at IS NULL ORDER BY id LIMIT 20 OFFSET 0', params: (u) => [u] },
  'users page': { text: 'SELECT * FROM users WHERE deleted_at IS NULL ORDER BY id LIMIT 20 OFFSET 0', params: () => [] },
  // linear in the users table: reported on its own at the scale size
  'users count': { text: 'SELECT count(*) FROM users WHERE deleted_at IS NULL', params: () => [] },
};

export interface QueryStats {
  overall: LoadSummary;
  samples: Record<string, number[]>;
  perQuery: Record<string, LoadSummary & { n: number }>;
}

/** Samples the queries until `until` resolves (or `iterations` rounds), from its own connection. */
export async function sampleQueries(url: string, s: Session[], opts: { until?: Promise<unknown>; iterations?: number }): Promise<QueryStats> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const samples: Record<string, number[]> = {};
  let done = false;
  void opts.until?.then(() => (done = true));
  try {
    for (let round = 0; !done && (opts.iterations === undefined || round < opts.iterations); round++) {
      const who = s[round % s.length];
      const orderId = who.orderIds[round % Math.max(1, who.orderIds.length)] ?? 1;
      for (const [name, q] of Object.entries(QUERIES)) {
        const t = performance.now();
        await client.query(q.text, q.params(who.userId, orderId));
        (samples[name] ??= []).push(performance.now() - t);
      }
      if (opts.until) await sleep(5);
    }
  } finally {
    await client.end();
  }
  const perQuery: QueryStats['perQuery'] = {};
  for (const [name, list] of Object.entries(samples)) perQuery[name] = { ...summarise(list), n: list.length };
  return { overall: summarise(Object.values(samples).flat()), perQuery, samples };
}

export async function explain(client: pg.Client, text: string, params: unknown[]): Promise<{ plan: string; ms: number }> {
  const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, params);
  const lines = rows.map((r) => r['QUERY PLAN']);
  const exec = lines.find((l) => l.startsWith('Execution Time'));
  const nodes = lines.filter((l) => /Scan|Aggregate|Limit|Sort/.test(l)).map((l) => l.trim().replace(/\s+\(cost.*$/, ''));
  return { plan: nodes.join(' → '), ms: exec ? Number(/([\d.]+) ms/.exec(exec)?.[1]) : NaN };
}

/** VmRSS of a running process, in MiB (Linux /proc). */
export function rssMib(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]) / 1024;
}

/**
 * Resident memory of the process `pidOf` names (it may change: the cluster phase replaces the API
 * process), sampled every second until stopped. Read from /proc, not by scraping the service's
 * /metrics: a scrape a second is load of the bench's own, and it costs the API process CPU that the
 * paced scenarios would count against each request.
 */
export function rssSampler(pidOf: () => number): { stop: () => { maxMb: number; lastMb: number } } {
  let max = 0;
  let last = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        last = rssMib(pidOf());
        max = Math.max(max, last);
      } catch {
        // service restarting
      }
      await sleep(1000);
    }
  })();
  return {
    stop: () => {
      running = false;
      void loop;
      return { maxMb: max, lastMb: last };
    },
  };
}


/**
 * Deadlocks in the bench's databases over the whole run: pg_stat_database.deadlocks now against its
 * value when each database was created. Read once the services have stopped: a backend reports its
 * statistics at the latest when it exits.
 */
export async function deadlocksPhase(ctx: RunContext, report: Record<string, unknown>): Promise<Target> {
  const names = [...ctx.deadlocksAtStart.keys()];
  const now = await deadlockCounts(ctx, names);
  const during = Object.fromEntries(names.map((n) => [n, (now.get(n) ?? 0) - (ctx.deadlocksAtStart.get(n) ?? 0)]));
  const total = Object.values(during).reduce((a, b) => a + b, 0);
  report.deadlocks = during;
  log(`[${elapsed(ctx)}] deadlocks during the run (pg_stat_database): ${Object.entries(during).map(([n, d]) => `${n} ${d}`).join(', ')}`);
  return { name: `deadlocks during the run (pg_stat_database, ${names.length} bench databases)`, value: String(total), target: '0', pass: total === 0 };
}
