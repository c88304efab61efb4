/**
 * One order at a time, as a customer or a script places them: each `POST /orders` sent when the
 * previous order is final, the time from the request to the order read back final. Nothing is
 * forming a batch, so each order must be processed as soon as it is placed. Measured on the bench's
 * PostgreSQL service and on `npm start` as a new user runs it (embedded database, ROLE=all), whose
 * resident memory 10 s after it is ready is measured first, and which then carries the soak phase
 * (bench/soak.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { elapsed, log, type RunContext } from './context.ts';
import { rssMib } from './measure.ts';
import { ADMIN_PASSWORD, HIGH_LIMIT } from './options.ts';
import { call, startNode, stopProc, waitReady, type LoadRunner } from './procs.ts';
import { f1, type Target } from './report.ts';
import type { Bench } from './scenario.ts';
import { soakPhase } from './soak.ts';
import { startCommand } from './start-command.ts';
import { percentile } from './stats.ts';

export const ONE_AT_A_TIME_P50_GOAL_MS = 40;
export const ONE_AT_A_TIME_MAX_GOAL_MS = 1000;
export const NPM_START_RSS_GOAL_MIB = 250;
const ORDERS = 25;
const FINAL = new Set(['completed', 'failed', 'cancelled']);

/** Milliseconds from each order's POST to reading it back final, `ORDERS` orders one after another. */
export async function oneAtATime(baseUrl: string, token: string, productId: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < ORDERS; i++) {
    const started = performance.now();
    const placed = await call(`${baseUrl}/api/v1/orders`, { method: 'POST', token, body: { items: [{ product_id: productId, quantity: 1 }], shipping_address: '1 Bench Road' } });
    if (placed.status !== 201) throw new Error(`POST /orders: ${placed.status} ${JSON.stringify(placed.body)}`);
    for (;;) {
      const read = await call(`${baseUrl}/api/v1/orders/${String(placed.body.id)}`, { token });
      if (FINAL.has(String(read.body.status))) break;
      if (performance.now() - started > 30_000) throw new Error(`order ${String(placed.body.id)} not final after 30 s`);
      await sleep(2);
    }
    times.push(performance.now() - started);
  }
  return times;
}

function targets(where: string, times: number[]): Target[] {
  const sorted = [...times].sort((a, b) => a - b);
  const p50 = percentile(sorted, 50);
  const max = sorted[sorted.length - 1];
  log(`  ${where}: p50 ${f1(p50)} ms, max ${f1(max)} ms (${times.map((t) => Math.round(t)).join(' ')})`);
  return [
    { name: `one order at a time, ${where}: p50`, value: `${f1(p50)} ms`, target: `≤ ${ONE_AT_A_TIME_P50_GOAL_MS} ms`, pass: p50 <= ONE_AT_A_TIME_P50_GOAL_MS },
    { name: `one order at a time, ${where}: max`, value: `${f1(max)} ms`, target: `≤ ${ONE_AT_A_TIME_MAX_GOAL_MS} ms`, pass: max <= ONE_AT_A_TIME_MAX_GOAL_MS },
  ];
}

/** On the bench's service (PostgreSQL), as the first logged-in user. */
export async function oneAtATimeOnService(b: Bench): Promise<void> {
  log(`[${elapsed(b.ctx)}] one order at a time on PostgreSQL, ${ORDERS} orders`);
  const times = await oneAtATime(b.ctx.serviceUrl, b.users[0].token, 1);
  b.report.oneAtATimePostgres = times;
  b.targets.push(...targets('PostgreSQL', times));
}

/** `npm start` on a fresh data directory: its memory 10 s after it is ready, one order at a time, then the soak phase. */
export async function oneAtATimeEmbedded(ctx: RunContext, loader: LoadRunner, report: Record<string, unknown>): Promise<Target[]> {
  log(`[${elapsed(ctx)}] npm start (embedded, ROLE=all): memory, then one order at a time`);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'oas-bench-embedded-'));
  const port = ctx.opts.port + 3;
  const base = `http://127.0.0.1:${port}`;
  const { env, execArgv } = startCommand(ctx.root);
  const proc = startNode({
    name: 'embedded',
    script: path.join(ctx.root, 'src', 'server.ts'),
    env: {
      ...env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      DATABASE_URL: '',
      REDIS_URL: '',
      ROLE: 'all',
      NODE_ENV: 'production',
      ADMIN_EMAIL: 'admin@bench.example',
      ADMIN_PASSWORD,
      // the soak's load is sent as ten users from one address: counted, never refused
      RATE_LIMIT_AUTHENTICATED: HIGH_LIMIT,
      RATE_LIMIT_ANONYMOUS: HIGH_LIMIT,
    },
    logDir: ctx.logDir,
    execArgv,
  });
  ctx.procs.push(proc);
  try {
    // a fresh data directory is created first (initdb): up to a minute on a busy two-core host
    await waitReady(proc, `${base}/ready`, 180_000);
    await sleep(10_000);
    const rss = rssMib(proc.child.pid ?? 0);
    log(`  RSS 10 s after ready: ${f1(rss)} MiB`);
    const login = await call(`${base}/api/v1/auth/login`, { method: 'POST', body: { username: 'admin@bench.example', password: ADMIN_PASSWORD } });
    const token = String(login.body.access_token);
    // the demo catalogue a fresh `npm start` seeds: its first product
    const products = await call(`${base}/api/v1/products`, { token });
    const first = (products.body.items as { id: number }[])[0];
    const times = await oneAtATime(base, token, first.id);
    report.npmStart = { rssMib: rss, oneAtATime: times };
    const soak = ctx.opts.phase('soak') ? await soakPhase(ctx, loader, { base, pid: proc.child.pid ?? 0, adminToken: token }, report) : [];
    return [
      { name: '`npm start` (embedded, ROLE=all) RSS 10 s after ready', value: `${f1(rss)} MiB`, target: `≤ ${NPM_START_RSS_GOAL_MIB} MiB`, pass: rss <= NPM_START_RSS_GOAL_MIB },
      ...targets('embedded', times),
      ...soak,
    ];
  } finally {
    await stopProc(proc);
    ctx.procs.splice(ctx.procs.indexOf(proc), 1);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
