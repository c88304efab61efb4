/**
 * `npm run bench` — the service against the bare limit, on real PostgreSQL and Redis.
 * See bench/README.md for the flags, the scenarios and the targets.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import bcrypt from 'bcrypt';
import { Redis } from 'ioredis';
import pg from 'pg';
import { createDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { LoadRunner, startNode, stopProc, tail, waitReady, waitUntil, type Proc } from './procs.ts';
import { costLine, cpuMeter } from './cpu.ts';
import { failures, latencyChart, scenarioTable, summaryLine, table, targetTable, targetTally, type ScenarioRow, type Target } from './report.ts';
import { emailOf, growOrders, growUsers, seed, skuOf, vacuumAnalyze, type SeedPlan } from './seed.ts';
import { summarise } from './stats.ts';
import type { LoadJob, LoadResult, LoadSummary, Pattern } from './types.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.dirname(here);

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    orders: { type: 'string' },
    users: { type: 'string' },
    duration: { type: 'string' },
    warmup: { type: 'string' },
    connections: { type: 'string', default: '32' },
    scale: { type: 'string' },
    'no-scale': { type: 'boolean', default: false },
    'no-cluster': { type: 'boolean', default: false },
    'cpu-prof': { type: 'boolean', default: false },
    'keep-db': { type: 'boolean', default: false },
    'keep-logs': { type: 'boolean', default: false },
    port: { type: 'string', default: '18400' },
    rate: { type: 'string', default: '50' },
    headroom: { type: 'string' },
    only: { type: 'string' },
    // split: one ROLE=api process plus one ROLE=worker process (the fleet topology); all: one ROLE=all process
    topology: { type: 'string', default: 'split' },
  },
});
if (!['split', 'all'].includes(args.topology ?? '')) throw new Error(`--topology: split or all, got ${args.topology}`);
const split = args.topology === 'split';
const PHASES = ['reads', 'writes', 'mixed', 'logins', 'cluster', 'scale'] as const;
// a quick run (a CI smoke, under 2 min) leaves out the WEB_CONCURRENCY comparison, which has no
// target and starts three more processes; `--only cluster` still runs it
const quickDefault = PHASES.filter((p) => p !== 'cluster');
const only = new Set((args.only ?? (args.quick ? quickDefault : PHASES).join(',')).split(',').map((s) => s.trim()));
for (const p of only) if (!(PHASES as readonly string[]).includes(p)) throw new Error(`--only: unknown phase ${p} (${PHASES.join(', ')})`);
const phase = (p: (typeof PHASES)[number]): boolean => only.has(p);


const quick = args.quick;
const ordersN = Number(args.orders ?? (quick ? 10_000 : 100_000));
const usersN = Number(args.users ?? (quick ? 300 : 1_000));
const duration = Number(args.duration ?? (quick ? 3 : 10));
const warmup = Number(args.warmup ?? (quick ? 1 : 2));
const connections = Number(args.connections);
const scaleSmall = 10_000;
const scaleLarge = args['no-scale'] || !only.has('scale') ? 0 : Number(args.scale ?? (quick ? 100_000 : 1_000_000));
const scaleDuration = quick ? 2 : 5;
/** how long to wait for the job backlog after a write scenario */
const drainTimeoutMs = quick ? 15_000 : 60_000;
const port = Number(args.port);
/** requests per second of the paced write scenarios (latency below saturation, open loop) */
const RATE = Number(args.rate);
/** higher paced rates tried after RATE (informative, stopping at the first miss): full run 2× and 4× RATE, quick none */
const HEADROOM = (args.headroom ?? (quick ? '' : `${2 * RATE},${4 * RATE}`)).split(',').filter(Boolean).map(Number);
if (HEADROOM.some((r) => !(r > 0))) throw new Error(`--headroom: comma-separated rates, got ${args.headroom}`);
const basePort = port + 1;
const LOGGED_IN = 50;
const PASSWORD = 'bench-password-1';
const ADMIN_PASSWORD = 'bench-admin-password-1';
const WEBHOOK_SECRET = 'bench-shopify-secret';
const HIGH_LIMIT = '1000000000';
const PRODUCTS = 1000;

const runId = `${Date.now().toString(36)}${crypto.randomBytes(3).toString('hex')}`;
const adminUrl = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const redisPrefix = `oas:bench:${runId}`;
const dbName = `oas_bench_${runId}`;
const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'oas-bench-'));
const resultsDir = path.join(here, 'results');
fs.mkdirSync(resultsDir, { recursive: true });

const dbUrl = (name: string): string => {
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return u.toString();
};

const log = (msg: string) => process.stdout.write(`${msg}\n`);
const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0)}s`;

// ---------------------------------------------------------------- databases, processes

const createdDbs: string[] = [];
const procs: Proc[] = [];

async function adminQuery(sqlText: string): Promise<void> {
  const c = new pg.Client({ connectionString: adminUrl.toString() });
  await c.connect();
  try {
    await c.query(sqlText);
  } finally {
    await c.end();
  }
}

async function freshDatabase(name: string): Promise<pg.Client> {
  await adminQuery(`CREATE DATABASE ${name}`);
  createdDbs.push(name);
  const handle = await createDatabase({ databaseUrl: dbUrl(name), dataDir: logDir, poolSize: 2 });
  await migrateToLatest(handle.db);
  await handle.close();
  const client = new pg.Client({ connectionString: dbUrl(name) });
  await client.connect();
  return client;
}

function serviceEnv(database: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: dbUrl(database),
    REDIS_URL: redisUrl,
    PORT: String(port),
    HOST: '127.0.0.1',
    ROLE: split ? 'api' : 'all',
    // the production default: every request writes its access-log line (finding 22)
    LOG_LEVEL: 'info',
    NODE_ENV: 'production',
    BCRYPT_ROUNDS: '10',
    ADMIN_EMAIL: 'admin@bench.example',
    ADMIN_PASSWORD,
    RATE_LIMIT_AUTHENTICATED: HIGH_LIMIT,
    RATE_LIMIT_ANONYMOUS: HIGH_LIMIT,
    RATE_LIMIT_WEBHOOK: HIGH_LIMIT,
    RATE_LIMIT_KEY_PREFIX: redisPrefix,
    SHOPIFY_WEBHOOK_SECRET: WEBHOOK_SECRET,
    DATA_DIR: path.join(logDir, 'data'),
    WEB_CONCURRENCY: '1',
    ...(process.env.BENCH_SERVICE_ENV ? (JSON.parse(process.env.BENCH_SERVICE_ENV) as Record<string, string>) : {}),
    ...extra,
  };
}

async function startService(name: string, database: string, extra: Record<string, string> = {}): Promise<Proc> {
  const profDir = path.join(resultsDir, 'prof');
  const execArgv = args['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [];
  const script = path.join(root, 'src', 'server.ts');
  const proc = startNode({ name, script, env: serviceEnv(database, extra), logDir, execArgv });
  procs.push(proc);
  await waitReady(proc, `http://127.0.0.1:${port}/ready`);
  if (split) {
    // the job worker: no HTTP; started once the API has migrated the database
    const env = serviceEnv(database, { ...extra, ROLE: 'worker', WEB_CONCURRENCY: '1', PORT: String(port + 2) });
    const worker = startNode({ name: `${name}-worker`, script, env, logDir, execArgv });
    procs.push(worker);
    workers.set(proc, worker);
    // ready once it prints that it has started (src/server.ts, on a non-TTY stdout)
    await waitUntil(worker, async () => tail(worker.logPath, 200).includes('Worker started'), 60_000, 100);
  }
  return proc;
}

/** the ROLE=worker process beside each API process (topology split) */
const workers = new Map<Proc, Proc>();

async function stop(proc: Proc): Promise<void> {
  const worker = workers.get(proc);
  workers.delete(proc);
  await Promise.all([stopProc(proc), worker && stopProc(worker)]);
  procs.splice(procs.indexOf(proc), 1);
  if (worker) procs.splice(procs.indexOf(worker), 1);
}

async function cleanup(): Promise<void> {
  for (const p of [...procs].reverse()) await stopProc(p).catch(() => {});
  if (!args['keep-db']) {
    for (const name of createdDbs) await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
  }
  // only this run's own keys
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${redisPrefix}*`, 'COUNT', 1000);
      if (keys.length) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } catch {
    // Redis gone: nothing to flush
  } finally {
    redis.disconnect();
  }
}

// ---------------------------------------------------------------- the service's users and data

interface Session {
  userId: number;
  email: string;
  token: string;
  orderIds: number[];
  orderCount: number;
  itemCount: number;
}

async function login(email: string, password: string): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: email, password }),
  });
  const body = (await res.json()) as { access_token?: string };
  if (res.status !== 200 || !body.access_token) throw new Error(`login ${email}: ${res.status} ${JSON.stringify(body)}`);
  return body.access_token;
}

/** Logs in `count` different users (spread over the customers) and collects ids each may read. */
async function sessions(client: pg.Client, count: number, customers: number): Promise<Session[]> {
  const step = Math.max(1, Math.floor(customers / count));
  const numbers = Array.from({ length: Math.min(count, customers) }, (_, i) => 1 + i * step);
  const out: Session[] = [];
  for (let i = 0; i < numbers.length; i += 4) {
    const tokens = await Promise.all(numbers.slice(i, i + 4).map((n) => login(emailOf(n), PASSWORD)));
    for (const [k, token] of tokens.entries()) {
      const email = emailOf(numbers[i + k]);
      {
        const user = await client.query<{ id: number }>('SELECT id FROM users WHERE email = $1', [email]);
        const userId = Number(user.rows[0].id);
        const orders = await client.query<{ id: number }>('SELECT id FROM orders WHERE user_id = $1 ORDER BY random() LIMIT 50', [userId]);
        const counts = await client.query<{ o: number; i: number }>(
          `SELECT (SELECT count(*)::int FROM orders WHERE user_id = $1) AS o,
                  (SELECT count(*)::int FROM items WHERE user_id = $1 AND deleted_at IS NULL) AS i`,
          [userId],
        );
        out.push({
          userId,
          email,
          token,
          orderIds: orders.rows.map((r) => Number(r.id)),
          orderCount: Number(counts.rows[0].o),
          itemCount: Number(counts.rows[0].i),
        });
      }
    }
  }
  return out;
}

const pages = (count: number, size: number, max: number): number[] =>
  Array.from({ length: Math.max(1, Math.min(max, Math.ceil(count / size))) }, (_, i) => i + 1);

function readPatterns(s: Session[]): Record<string, { service: Pattern; baseline: Pattern }> {
  return {
    'GET /auth/me': {
      service: { kind: 'get', entries: s.map((x) => ({ token: x.token, paths: ['/api/v1/auth/me'] })) },
      baseline: { kind: 'get', entries: s.map((x) => ({ paths: [`/users/${x.userId}`] })) },
    },
    'GET /orders/{id}': {
      service: { kind: 'get', entries: s.map((x) => ({ token: x.token, paths: x.orderIds.map((id) => `/api/v1/orders/${id}`) })) },
      baseline: { kind: 'get', entries: s.map((x) => ({ paths: x.orderIds.map((id) => `/orders/${id}`) })) },
    },
    'GET /orders?page': {
      service: {
        kind: 'get',
        entries: s.map((x) => ({ token: x.token, paths: pages(x.orderCount, 20, 5).map((p) => `/api/v1/orders?page=${p}&page_size=20`) })),
      },
      baseline: { kind: 'get', entries: s.map((x) => ({ paths: pages(x.orderCount, 20, 5).map((p) => `/users/${x.userId}/orders?page=${p}`) })) },
    },
    'GET /items': {
      service: {
        kind: 'get',
        entries: s.map((x) => ({ token: x.token, paths: pages(x.itemCount, 20, 3).map((p) => `/api/v1/items?skip=${(p - 1) * 20}&limit=20`) })),
      },
      baseline: { kind: 'get', entries: s.map((x) => ({ paths: pages(x.itemCount, 20, 3).map((p) => `/users/${x.userId}/items?skip=${(p - 1) * 20}`) })) },
    },
  };
}

const WEBHOOK_TEMPLATE: Record<string, unknown> = {
  name: '#1042',
  currency: 'USD',
  financial_status: 'paid',
  created_at: '2026-11-20T14:03:11-05:00',
  shipping_address: {
    first_name: 'Jane',
    last_name: 'Doe',
    address1: '12 Harbour Street',
    city: 'Portland',
    province_code: 'ME',
    zip: '04101',
    country_code: 'US',
  },
};

function writePatterns(s: Session[], customers: number): { order: Pattern; webhook: Pattern } {
  return {
    order: {
      kind: 'post-order',
      path: '/api/v1/orders',
      tokens: s.map((x) => x.token),
      productIds: Array.from({ length: PRODUCTS }, (_, i) => i + 1),
    },
    webhook: {
      kind: 'webhook',
      path: '/api/v1/webhooks/orders/create',
      secret: WEBHOOK_SECRET,
      template: WEBHOOK_TEMPLATE,
      idPrefix: `${runId}-${crypto.randomBytes(2).toString('hex')}-`,
      emails: Array.from({ length: Math.min(customers, 200) }, (_, i) => emailOf(i + 1)),
      skus: Array.from({ length: PRODUCTS }, (_, i) => skuOf(i + 1)),
    },
  };
}

// ---------------------------------------------------------------- measurements beside the load

async function maxId(client: pg.Client, table: string): Promise<number> {
  const { rows } = await client.query<{ m: number | null }>(`SELECT max(id) AS m FROM ${table}`);
  return Number(rows[0].m ?? 0);
}

interface Drain {
  ms: number;
  unfinishedOrders: number;
  unprocessedWebhooks: number;
  /** orders that reached a final state during the drain, per second */
  finalisedPerSecond: number;
}

/** Waits until no order after `sinceOrder` is pending/processing and no webhook after `sinceInbound` is unprocessed. */
async function drain(client: pg.Client, sinceOrder: number, sinceInbound: number, timeoutMs: number): Promise<Drain> {
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
async function backgroundLatency(client: pg.Client, sinceOrder: number): Promise<{ orders: number; latency: LoadSummary; failed: number }> {
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
  'orders count': { text: 'SELECT count(*) FROM orders WHERE user_id = $1', params: (u) => [u] },
  'items page': { text: 'SELECT * FROM items WHERE user_id = $1 AND deleted_at IS NULL ORDER BY id LIMIT 20 OFFSET 0', params: (u) => [u] },
  'users page': { text: 'SELECT * FROM users WHERE deleted_at IS NULL ORDER BY id LIMIT 20 OFFSET 0', params: () => [] },
  // what listUsers sends since the user_counts migration: the trigger-maintained total
  'users count': { text: 'SELECT coalesce(sum(total), 0) FROM user_counts', params: () => [] },
};

interface QueryStats {
  overall: LoadSummary;
  samples: Record<string, number[]>;
  perQuery: Record<string, LoadSummary & { n: number }>;
}

/** Samples the queries until `until` resolves (or `iterations` rounds), from its own connection. */
async function sampleQueries(url: string, s: Session[], opts: { until?: Promise<unknown>; iterations?: number }): Promise<QueryStats> {
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

async function explain(client: pg.Client, text: string, params: unknown[]): Promise<{ plan: string; ms: number }> {
  const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, params);
  const lines = rows.map((r) => r['QUERY PLAN']);
  const exec = lines.find((l) => l.startsWith('Execution Time'));
  const nodes = lines.filter((l) => /Scan|Aggregate|Limit|Sort/.test(l)).map((l) => l.trim().replace(/\s+\(cost.*$/, ''));
  return { plan: nodes.join(' → '), ms: exec ? Number(/([\d.]+) ms/.exec(exec)?.[1]) : NaN };
}

/** Resident memory of the process answering /metrics, sampled until stopped. */
function rssSampler(): { stop: () => { maxMb: number; lastMb: number } } {
  let max = 0;
  let last = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        const m = /^process_resident_memory_bytes (\d+)/m.exec(text);
        if (m) {
          last = Number(m[1]);
          max = Math.max(max, last);
        }
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
      return { maxMb: max / 2 ** 20, lastMb: last / 2 ** 20 };
    },
  };
}

// ---------------------------------------------------------------- main

const f1 = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : '-');

async function main(): Promise<void> {
  log(`oas bench ${quick ? '(quick) ' : ''}— run ${runId}`);
  log(
    `  ${os.cpus().length} CPUs, Node ${process.version}, ${connections} connections, ${duration} s per scenario (+${warmup} s warm-up), ` +
      `${ordersN.toLocaleString('en-US')} orders, ${usersN.toLocaleString('en-US')} users; logs in ${logDir}`,
  );
  log(`  service: ${split ? 'one ROLE=api process + one ROLE=worker process (--topology split)' : 'one ROLE=all process (--topology all)'}`);
  log(`  rate limits set to ${HIGH_LIMIT} per window for the throughput scenarios (every request is still counted in Redis)`);
  const report: Record<string, unknown> = {
    runId,
    startedAt: new Date().toISOString(),
    mode: quick ? 'quick' : 'full',
    machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, node: process.version, loadavg: os.loadavg() },
    config: { connections, duration, warmup, orders: ordersN, users: usersN, scaleSmall, scaleLarge, bcryptRounds: 10, topology: args.topology },
  };
  const targets: Target[] = [];
  const passwordHash = await bcrypt.hash(PASSWORD, 10);

  // ---- seed
  log(`\n[${elapsed()}] seeding ${dbName}`);
  const client = await freshDatabase(dbName);
  const tSeed = Date.now();
  const plan: SeedPlan = { users: usersN, customers: usersN, products: PRODUCTS, orders: ordersN, itemsPerCustomer: 30, passwordHash };
  await seed(client, plan);
  report.seedSeconds = (Date.now() - tSeed) / 1000;
  const pgVersion = (await client.query<{ server_version: string }>('SHOW server_version')).rows[0].server_version;
  (report.machine as Record<string, unknown>).postgres = pgVersion;
  log(`  seeded in ${f1(report.seedSeconds as number)} s (PostgreSQL ${pgVersion})`);

  // ---- processes
  const baseline = startNode({
    name: 'baseline',
    script: path.join(here, 'baseline.ts'),
    env: { DATABASE_URL: dbUrl(dbName), PORT: String(basePort) },
    logDir,
  });
  procs.push(baseline);
  await waitReady(baseline, `http://127.0.0.1:${basePort}/health`);
  let service = await startService('service', dbName);
  const loader = new LoadRunner(path.join(here, 'load.ts'));
  const svcUrl = `http://127.0.0.1:${port}`;
  const baseUrl = `http://127.0.0.1:${basePort}`;
  const job = (name: string, url: string, pattern: Pattern, over: Partial<LoadJob> = {}): LoadJob => ({
    name,
    url,
    connections,
    durationSec: duration,
    warmupSec: warmup,
    pattern,
    ...over,
  });
  const runOne = async (j: LoadJob): Promise<LoadResult> => (await loader.run([j]))[0];
  // CPU of the current service processes and of their database backends, per request
  const meter = () =>
    cpuMeter({
      processes: () => ({ api: [service.child.pid ?? 0], worker: [workers.get(service)?.child.pid ?? 0] }),
      db: client,
      database: dbName,
    });
  // requests sent in the warm-up and the measured time (the CPU window covers both)
  const sent = (r: LoadResult) => r.okRps * (r.durationSec + warmup);

  try {
    log(`[${elapsed()}] logging in ${LOGGED_IN} users`);
    const users = await sessions(client, LOGGED_IN, usersN);
    const rss = rssSampler();

    // ---- reads, each beside its baseline
    const rows: ScenarioRow[] = [];
    const reads = readPatterns(users);
    const writes = writePatterns(users, usersN);
    let queriesUnderLoad: QueryStats | undefined;
    if (phase('reads')) {
      for (const [name, p] of Object.entries(reads)) {
        log(`[${elapsed()}] ${name}`);
        const base = await runOne(job(`${name} (baseline)`, baseUrl, p.baseline));
        const cpu = await meter();
        const svc = await runOne(job(name, svcUrl, p.service));
        const cost = await cpu.stop(sent(svc));
        rows.push({ name, service: svc, baseline: base, cpu: cost });
        log(`  service ${Math.round(svc.okRps)} req/s ${summaryLine(svc.latency)} | baseline ${Math.round(base.okRps)} req/s ${summaryLine(base.latency)} ${failures(svc)}`);
        log(`  ${costLine(cost)}`);
        const ratio = svc.okRps / base.okRps;
        targets.push({ name: `${name} throughput vs baseline`, value: `${ratio.toFixed(2)}×`, target: '≥ 0.60×', pass: ratio >= 0.6 });
        targets.push({ name: `${name} p99`, value: `${f1(svc.latency.p99)} ms`, target: '< 25 ms', pass: svc.latency.p99 < 25 && failures(svc) === '' });
      }
    }

    // ---- mixed, with background latency and query timing beside it
    if (phase('mixed')) {
      log(`[${elapsed()}] mixed workload`);
      const mix: Pattern = {
        kind: 'mix',
        parts: [
          { weight: 25, pattern: reads['GET /auth/me'].service },
          { weight: 20, pattern: reads['GET /orders/{id}'].service },
          { weight: 20, pattern: reads['GET /orders?page'].service },
          { weight: 15, pattern: reads['GET /items'].service },
          { weight: 12, pattern: writes.order },
          { weight: 8, pattern: writes.webhook },
        ],
      };
      // a backlog left by the write scenarios would be measured as the mixed load's latency
      const backlog = await drain(client, 0, 0, drainTimeoutMs);
      const sinceOrder = await maxId(client, 'orders');
      const sinceInbound = await maxId(client, 'inbound_webhooks');
      const cpu = await meter();
      const mixedRun = runOne(job('mixed', svcUrl, mix, { warmupSec: 0 }));
      const mixedQueries = sampleQueries(dbUrl(dbName), users, { until: mixedRun });
      const mixed = await mixedRun;
      queriesUnderLoad = await mixedQueries;
      const mixedDrain = await drain(client, sinceOrder, sinceInbound, drainTimeoutMs * 2);
      const mixedCost = await cpu.stop(mixed.okRps * mixed.durationSec);
      rows.push({ name: 'mixed', service: mixed, cpu: mixedCost });
      const bg = await backgroundLatency(client, sinceOrder);
      report.background = {
        ...bg,
        backlogAtStart: backlog.unfinishedOrders + backlog.unprocessedWebhooks,
        drainAfterLoadMs: mixedDrain.ms,
        unfinished: mixedDrain.unfinishedOrders,
        unprocessedWebhooks: mixedDrain.unprocessedWebhooks,
      };
      report.queriesUnderMixedLoad = queriesUnderLoad;
      log(`  ${Math.round(mixed.okRps)} req/s ${summaryLine(mixed.latency)} ${failures(mixed)}`);
      log(
        `  background created → final: ${bg.orders} orders, ${summaryLine(bg.latency)}; unfinished: ${mixedDrain.unfinishedOrders}` +
          `${mixedDrain.unprocessedWebhooks ? ` (+ ${mixedDrain.unprocessedWebhooks} webhooks not yet processed)` : ''} ` +
          `(drained ${f1(mixedDrain.ms / 1000)} s after the load${backlog.unfinishedOrders + backlog.unprocessedWebhooks ? `; backlog at start ${backlog.unfinishedOrders + backlog.unprocessedWebhooks}` : ''})`,
      );
      log(`  ${costLine(mixedCost)} (the jobs included)`);
      log(`  DB queries under the mixed load: ${summaryLine(queriesUnderLoad.overall)}`);
      targets.push({ name: 'background p95 (mixed load)', value: `${f1(bg.latency.p95)} ms`, target: '< 1000 ms', pass: bg.latency.p95 < 1000 });
      targets.push({ name: 'orders unfinished after mixed load', value: String(mixedDrain.unfinishedOrders), target: '0', pass: mixedDrain.unfinishedOrders === 0 });
    }

    // ---- logins saturating bcrypt beside /auth/me
    if (phase('logins')) {
      log(`[${elapsed()}] POST /auth/login (8 connections) beside GET /auth/me (${connections})`);
      const credentials = users.map((u) => ({ username: u.email, password: PASSWORD }));
      const [logins, meUnderLogins] = await loader.run([
        job('POST /auth/login', svcUrl, { kind: 'login', path: '/api/v1/auth/login', credentials }, { connections: 8 }),
        job('GET /auth/me (beside logins)', svcUrl, reads['GET /auth/me'].service),
      ]);
      rows.push({ name: 'POST /auth/login', service: logins }, { name: '/auth/me beside logins', service: meUnderLogins });
      log(`  logins ${f1(logins.okRps)}/s ${summaryLine(logins.latency)}; /auth/me ${Math.round(meUnderLogins.okRps)} req/s ${summaryLine(meUnderLogins.latency)}`);
      targets.push({
        name: '/auth/me p99 while logins saturate bcrypt',
        value: `${f1(meUnderLogins.latency.p99)} ms`,
        target: '< 50 ms',
        pass: meUnderLogins.latency.p99 < 50 && failures(meUnderLogins) === '',
      });
    }

    // ---- multi-core: the same /auth/me load on 1 process, then on 2 (measured back to back)
    if (phase('cluster') && !args['no-cluster']) {
      log(`[${elapsed()}] GET /auth/me: 1 process, then WEB_CONCURRENCY=2 (2 API processes + 1 job worker)`);
      const one = await runOne(job('GET /auth/me (1 process)', svcUrl, reads['GET /auth/me'].service));
      await stop(service);
      service = await startService('service-cluster', dbName, { WEB_CONCURRENCY: '2' });
      const two = await runOne(job('GET /auth/me (2 processes)', svcUrl, reads['GET /auth/me'].service));
      const speedup = two.okRps / one.okRps;
      report.cluster = { one, two, speedup };
      log(`  1 process ${Math.round(one.okRps)} req/s (p99 ${f1(one.latency.p99)} ms) → 2 processes ${Math.round(two.okRps)} req/s (p99 ${f1(two.latency.p99)} ms): ${speedup.toFixed(2)}×`);
      if (phase('writes')) {
        await stop(service);
        service = await startService('service', dbName);
      }
    }


    // ---- writes, each followed by the processing of what it queued
    if (phase('writes')) {
      // the saturated rows are informative; in a quick run they are kept short, as their backlog
      // (webhooks are acknowledged faster than processed) has to drain before the paced runs
      const saturatedWrite: Partial<LoadJob> = quick ? { durationSec: 2, warmupSec: 0 } : {};
      log(`[${elapsed()}] POST /orders`);
      let sinceOrder = await maxId(client, 'orders');
      let sinceInbound = await maxId(client, 'inbound_webhooks');
      let cpu = await meter();
      const post = await runOne(job('POST /orders', svcUrl, writes.order, saturatedWrite));
      const postDrain = await drain(client, sinceOrder, sinceInbound, drainTimeoutMs);
      const postBg = await backgroundLatency(client, sinceOrder);
      const postCost = await cpu.stop(postBg.orders);
      rows.push({ name: 'POST /orders', service: post, cpu: postCost });
      log(`  ${Math.round(post.okRps)} req/s ${summaryLine(post.latency)} ${failures(post)}`);
      log(`  ${costLine(postCost)} (processing included)`);
      targets.push({ name: `POST /orders p99 at saturation (${connections} conn.)`, informative: true, value: `${f1(post.latency.p99)} ms`, target: '< 50 ms', pass: post.latency.p99 < 50 && failures(post) === '' });
      // jobs/s: orders finalised during the load and the drain, over that time
      const jobsPerSecond = postBg.orders / (post.durationSec + (saturatedWrite.warmupSec ?? warmup) + postDrain.ms / 1000);
      report.jobs = { ordersProcessed: postBg.orders, jobsPerSecond, drainMs: postDrain.ms, drainRate: postDrain.finalisedPerSecond, unfinished: postDrain.unfinishedOrders };
      log(
        `  order jobs: ${postBg.orders} processed, ${f1(jobsPerSecond)} jobs/s over load + drain, ${f1(postDrain.finalisedPerSecond)} jobs/s while draining ` +
          `(${f1(postDrain.ms / 1000)} s${postDrain.unfinishedOrders ? `, ${postDrain.unfinishedOrders} still unfinished: drain timeout` : ''})`,
      );

      // latency below saturation: the same requests at a fixed rate (open loop, bench/load.ts). A
      // full run gives them three times the duration: at 50/s, 10 s would leave the p99 resting on
      // the 5 slowest of 500 requests, one hiccup of the host apart
      const pacedSeconds = quick ? duration : duration * 3;
      const pacedRun = async (label: string, pattern: Pattern, goalMs: number, rate: number, seconds: number, informative: boolean): Promise<boolean> => {
        log(`[${elapsed()}] ${label} at ${rate} req/s`);
        // from an idle worker: what an earlier scenario left would be measured here
        await drain(client, 0, 0, drainTimeoutMs * 4);
        const fromOrder = await maxId(client, 'orders');
        const fromInbound = await maxId(client, 'inbound_webhooks');
        const pacedCpu = await meter();
        const paced = await runOne(job(`${label} (${rate}/s)`, svcUrl, pattern, { rate, durationSec: seconds }));
        await drain(client, fromOrder, fromInbound, drainTimeoutMs);
        const pacedCost = await pacedCpu.stop((await maxId(client, 'orders')) - fromOrder);
        rows.push({ name: `${label} (${rate}/s)`, service: paced, cpu: pacedCost });
        log(`  ${Math.round(paced.okRps)} req/s ${summaryLine(paced.latency)} ${failures(paced)}`);
        log(`  ${costLine(pacedCost)} (processing included)`);
        const pass = paced.latency.p99 < goalMs && failures(paced) === '';
        targets.push({ name: `${label} p99 at ${rate} req/s`, informative, value: `${f1(paced.latency.p99)} ms`, target: `< ${goalMs} ms`, pass });
        return pass;
      };
      // the target's rate, then (full run) higher rates until one misses: how much headroom it has
      const pacedWrite = async (label: string, pattern: Pattern, goalMs: number): Promise<void> => {
        if (!(await pacedRun(label, pattern, goalMs, RATE, pacedSeconds, false))) return;
        for (const rate of HEADROOM) if (!(await pacedRun(label, pattern, goalMs, rate, duration, true))) return;
      };
      await pacedWrite('POST /orders', writes.order, 50);

      log(`[${elapsed()}] POST /webhooks/orders/create`);
      sinceOrder = await maxId(client, 'orders');
      sinceInbound = await maxId(client, 'inbound_webhooks');
      cpu = await meter();
      const hook = await runOne(job('POST /webhooks/orders/create', svcUrl, writes.webhook, saturatedWrite));
      // webhooks are acknowledged faster than they are processed: a long backlog, wait for it all
      const hookDrain = await drain(client, sinceOrder, sinceInbound, drainTimeoutMs * 4);
      const hookCost = await cpu.stop((await maxId(client, 'inbound_webhooks')) - sinceInbound);
      rows.push({ name: 'POST /webhooks (ack)', service: hook, cpu: hookCost });
      const hookStats = await client.query<{ s: string; n: number }>(
        'SELECT status AS s, count(*)::int AS n FROM inbound_webhooks WHERE id > $1 GROUP BY status',
        [sinceInbound],
      );
      const stored = Object.fromEntries(hookStats.rows.map((r) => [r.s, Number(r.n)]));
      report.webhooks = { ack: hook.latency, stored, drainMs: hookDrain.ms };
      log(`  ${Math.round(hook.okRps)} req/s ${summaryLine(hook.latency)} ${failures(hook)}; after ${f1(hookDrain.ms / 1000)} s: ${JSON.stringify(stored)}`);
      log(`  ${costLine(hookCost)} (processing included)`);
      targets.push({ name: `webhook ack p99 at saturation (${connections} conn.)`, informative: true, value: `${f1(hook.latency.p99)} ms`, target: '< 20 ms', pass: hook.latency.p99 < 20 && failures(hook) === '' });

      await pacedWrite('webhook ack', writes.webhook, 20);
    }

    report.rss = rss.stop();
    log(`  API process RSS: max ${f1((report.rss as { maxMb: number }).maxMb)} MB`);
    report.scenarios = rows;
    await stop(service);

    if (rows.length) {
      fs.writeFileSync(path.join(resultsDir, 'latency.svg'), latencyChart(rows, `Latency per scenario, service vs bare baseline (${connections} connections, ${os.cpus().length} CPUs)`));
    }

    // ---- scale
    if (scaleLarge > 0) report.scale = await scalePhase(loader, targets);

    // ---- output
    report.targets = targets;
    report.finishedAt = new Date().toISOString();
    report.totalSeconds = (Date.now() - started) / 1000;
    const file = path.join(resultsDir, `bench-${new Date().toISOString().replace(/[:.]/g, '-')}${quick ? '-quick' : ''}.json`);
    fs.writeFileSync(file, JSON.stringify(report, null, 2));
    if (rows.length) log(`\n${scenarioTable(rows)}\n`);
    if (queriesUnderLoad) {
      log(
        table(
          ['query (under mixed load)', 'p50 ms', 'p95 ms', 'p99 ms', 'n'],
          Object.entries(queriesUnderLoad.perQuery).map(([n, q]) => [n, q.p50.toFixed(2), q.p95.toFixed(2), q.p99.toFixed(2), String(q.n)]),
        ),
      );
    }
    log(`\n${targetTable(targets)}\n`);
    log(`${targetTally(targets)}; total ${elapsed()}`);
    log(`results: ${path.relative(root, file)}${rows.length ? `, chart: ${path.relative(root, path.join(resultsDir, 'latency.svg'))}` : ''}`);
  } finally {
    loader.close();
    await client.end();
  }
}

/** GET /orders and GET /users at `scaleSmall` and at `scaleLarge` rows, on a database of their own. */
async function scalePhase(loader: LoadRunner, targets: Target[]): Promise<Record<string, unknown>> {
  const name = `${dbName}_scale`;
  log(`\n[${elapsed()}] scale: ${scaleSmall.toLocaleString('en-US')} → ${scaleLarge.toLocaleString('en-US')} orders and users (${name})`);
  const client = await freshDatabase(name);
  const customers = 1000;
  const passwordHash = await bcrypt.hash(PASSWORD, 10);
  await seed(client, { users: scaleSmall, customers, products: PRODUCTS, orders: scaleSmall, itemsPerCustomer: 0, passwordHash });
  const service = await startService('service-scale', name);
  const out: Record<string, unknown> = { customers, note: 'orders belong to the first 1,000 users: 10 per user at the small size, up to 1,000 at the large one' };
  try {
    const users = await sessions(client, LOGGED_IN, customers);
    const patterns = (): Record<string, Pattern> => ({
      'GET /orders': { kind: 'get', entries: users.map((u) => ({ token: u.token, paths: ['/api/v1/orders?page=1&page_size=20'] })) },
      'GET /users': {
        kind: 'get',
        entries: users.map((u) => ({ token: u.token, paths: [1, 2, 3, 4, 5].map((p) => `/api/v1/users?page=${p}&page_size=20`) })),
      },
    });
    const measure = async (size: number) => {
      const res: Record<string, LoadResult> = {};
      for (const [n, p] of Object.entries(patterns())) {
        res[n] = await loader.run([{ name: `${n} @${size}`, url: `http://127.0.0.1:${port}`, connections, durationSec: scaleDuration, warmupSec: 1, pattern: p }]).then((r) => r[0]);
        log(`  ${n} @ ${size.toLocaleString('en-US')}: ${Math.round(res[n].okRps)} req/s ${summaryLine(res[n].latency)} ${failures(res[n])}`);
      }
      const who = users[0];
      const plans = {
        ordersCount: await explain(client, 'SELECT count(*) FROM orders WHERE user_id = $1', [who.userId]),
        ordersPage: await explain(client, 'SELECT * FROM orders WHERE user_id = $1 ORDER BY created_at DESC, id DESC LIMIT 20', [who.userId]),
        usersCount: await explain(client, 'SELECT coalesce(sum(total), 0) FROM user_counts', []),
        usersPage: await explain(client, 'SELECT * FROM users WHERE deleted_at IS NULL ORDER BY id LIMIT 20 OFFSET 80', []),
      };
      for (const [n, e] of Object.entries(plans)) log(`    EXPLAIN ${n}: ${e.ms.toFixed(2)} ms — ${e.plan}`);
      return { results: res, plans };
    };
    log(`[${elapsed()}] scale @ ${scaleSmall.toLocaleString('en-US')}`);
    const small = await measure(scaleSmall);
    const tGrow = Date.now();
    await growOrders(client, scaleLarge, customers, PRODUCTS);
    await growUsers(client, scaleLarge, passwordHash);
    await vacuumAnalyze(client);
    out.growSeconds = (Date.now() - tGrow) / 1000;
    log(`  grown in ${f1(out.growSeconds as number)} s`);
    for (const u of users) {
      u.orderIds = (await client.query<{ id: number }>('SELECT id FROM orders WHERE user_id = $1 ORDER BY random() LIMIT 50', [u.userId])).rows.map((r) => Number(r.id));
    }
    log(`[${elapsed()}] scale @ ${scaleLarge.toLocaleString('en-US')}`);
    const large = await measure(scaleLarge);
    const queries = await sampleQueries(dbUrl(name), users, { iterations: 200 });
    log(`  DB queries @ ${scaleLarge.toLocaleString('en-US')} (idle, sequential): ${summaryLine(queries.overall)}`);
    log(
      table(
        ['query', 'p50 ms', 'p95 ms', 'p99 ms'],
        Object.entries(queries.perQuery).map(([n, q]) => [n, q.p50.toFixed(2), q.p95.toFixed(2), q.p99.toFixed(2)]),
      ),
    );
    Object.assign(out, { small, large, queriesAtLarge: queries });
    const o10 = small.results['GET /orders'].latency.p95;
    const o1m = large.results['GET /orders'].latency.p95;
    const u10 = small.results['GET /users'].latency.p95;
    const u1m = large.results['GET /users'].latency.p95;
    const label = scaleLarge >= 1_000_000 ? `${scaleLarge / 1_000_000}M` : `${scaleLarge / 1000}k`;
    // the all-users count is reported on its own (GET /users row below): it is linear in the users table
    const orderQueries = summarise(
      Object.entries(queries.perQuery)
        .filter(([n]) => n !== 'users count')
        .flatMap(([n]) => queries.samples[n]),
    );
    targets.push({
      name: `DB query p95 @ ${label} orders (all but the users count)`,
      value: `${orderQueries.p95.toFixed(2)} ms`,
      target: '< 5 ms',
      pass: orderQueries.p95 < 5,
    });
    targets.push({
      name: `users count query p95 @ ${label} users`,
      informative: true,
      value: `${queries.perQuery['users count'].p95.toFixed(2)} ms`,
      target: '< 5 ms',
      pass: queries.perQuery['users count'].p95 < 5,
    });
    targets.push({ name: `GET /orders p95 @ ${label} vs @ 10k`, value: `${f1(o1m)} vs ${f1(o10)} ms (${(o1m / o10).toFixed(2)}×)`, target: '≤ 2×', pass: o1m <= 2 * o10 });
    targets.push({ name: `GET /users p95 @ ${label} vs @ 10k`, informative: true, value: `${f1(u1m)} vs ${f1(u10)} ms (${(u1m / u10).toFixed(2)}×)`, target: '≤ 2×', pass: u1m <= 2 * u10 });
  } finally {
    await stop(service);
    await client.end();
  }
  return out;
}

let failed = false;
process.on('SIGINT', () => {
  log('\ninterrupted: cleaning up');
  void cleanup().finally(() => process.exit(130));
});
try {
  await main();
} catch (err) {
  failed = true;
  console.error(err instanceof Error ? err.stack : err);
} finally {
  await cleanup();
}
// the service's logs (an access-log line per request: hundreds of MB in a full run) are kept only
// when asked for, or when the run failed
if (failed || args['keep-logs']) log(`logs kept in ${logDir}`);
else fs.rmSync(logDir, { recursive: true, force: true });
process.exit(failed ? 1 : 0);
