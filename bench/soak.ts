/**
 * The soak phase: `npm start` (embedded database, ROLE=all) under a mixed load of reads and writes
 * for `--soak-seconds` (5 min; quick 30 s), its resident memory sampled every few seconds. The
 * figures are the peak and the growth over the second half, the slope of a least-squares line: by
 * then the heaps have grown to their working size, so a slope that stays above zero is memory that
 * is never given back.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { elapsed, log, type RunContext } from './context.ts';
import { rssMib } from './measure.ts';
import { PASSWORD } from './options.ts';
import { call, type LoadRunner } from './procs.ts';
import { f1, failures, summaryLine, type Target } from './report.ts';
import { slopePerMinute } from './stats.ts';
import type { Pattern } from './types.ts';

export const SOAK_PEAK_GOAL_MIB = 300;
export const SOAK_SLOPE_GOAL_MIB_PER_MIN = 0.2;
/** an open loop at a fixed rate: the data grows the same in every run, so two runs' slopes compare */
const RATE = 100;
const CONNECTIONS = 16;
const USERS = 10;
const PRODUCTS = 5;

export interface Embedded {
  base: string;
  pid: number;
  adminToken: string;
}

async function ok(what: string, res: Promise<{ status: number; body: Record<string, unknown> }>, status = 201): Promise<Record<string, unknown>> {
  const r = await res;
  if (r.status !== status) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** Users with a few items and orders each, and products whose stock never runs out (the demo catalogue's would). */
async function prepare(ctx: RunContext, { base, adminToken }: Embedded): Promise<Pattern> {
  const token = adminToken;
  const productIds: number[] = [];
  for (let i = 1; i <= PRODUCTS; i++) {
    const body = { sku: `SOAK-${ctx.runId}-${i}`, name: `Soak product ${i}`, price: 10 + i, stock: 1_000_000_000 };
    productIds.push(Number((await ok('POST /products', call(`${base}/api/v1/products`, { method: 'POST', token, body }))).id));
  }
  const users: { token: string; orderIds: number[] }[] = [];
  for (let i = 1; i <= USERS; i++) {
    const email = `soak${i}@bench.example`;
    await ok('POST /users', call(`${base}/api/v1/users`, { method: 'POST', token, body: { email, full_name: `Soak User ${i}`, password: PASSWORD } }));
    const login = await ok('POST /auth/login', call(`${base}/api/v1/auth/login`, { method: 'POST', body: { username: email, password: PASSWORD } }), 200);
    const userToken = String(login.access_token);
    const orderIds: number[] = [];
    for (let k = 0; k < 3; k++) {
      await ok('POST /items', call(`${base}/api/v1/items`, { method: 'POST', token: userToken, body: { name: `Soak item ${k}`, price: 5 + k } }));
      const order = { items: [{ product_id: productIds[k % PRODUCTS], quantity: 1 }], shipping_address: '1 Soak Lane' };
      orderIds.push(Number((await ok('POST /orders', call(`${base}/api/v1/orders`, { method: 'POST', token: userToken, body: order }))).id));
    }
    users.push({ token: userToken, orderIds });
  }
  const get = (paths: (u: (typeof users)[number]) => string[]): Pattern => ({ kind: 'get', entries: users.map((u) => ({ token: u.token, paths: paths(u) })) });
  return {
    kind: 'mix',
    parts: [
      { weight: 30, pattern: get(() => ['/api/v1/auth/me']) },
      { weight: 20, pattern: get((u) => u.orderIds.map((id) => `/api/v1/orders/${id}`)) },
      { weight: 20, pattern: get(() => ['/api/v1/orders?page=1&page_size=20', '/api/v1/orders?page=2&page_size=20']) },
      { weight: 15, pattern: get(() => ['/api/v1/items?skip=0&limit=20']) },
      { weight: 15, pattern: { kind: 'post-order', path: '/api/v1/orders', tokens: users.map((u) => u.token), productIds } },
    ],
  };
}

/** Orders not yet final, as the order console counts them. */
async function unfinished({ base, adminToken }: Embedded): Promise<number> {
  let n = 0;
  for (const status of ['pending', 'processing']) {
    const page = await ok('GET /admin/orders', call(`${base}/api/v1/admin/orders?status=${status}&page_size=1`, { token: adminToken }), 200);
    n += Number(page.total);
  }
  return n;
}

/** Runs the soak on the embedded service `e`; returns its targets (peak RSS, growth over the second half). */
export async function soakPhase(ctx: RunContext, loader: LoadRunner, e: Embedded, report: Record<string, unknown>): Promise<Target[]> {
  const seconds = ctx.opts.soakSeconds;
  const every = Math.min(5, Math.max(1, seconds / 20));
  log(`[${elapsed(ctx)}] npm start under ${seconds} s of mixed load (${RATE} req/s, open loop), RSS every ${every} s`);
  const pattern = await prepare(ctx, e);
  const started = Date.now();
  const samples: { t: number; mib: number }[] = [{ t: 0, mib: rssMib(e.pid) }];
  let running = true;
  const load = loader
    .run([{ name: 'soak (embedded)', url: e.base, connections: CONNECTIONS, durationSec: seconds, warmupSec: 0, rate: RATE, pattern }])
    .finally(() => (running = false));
  while (running) {
    await Promise.race([sleep(every * 1000), load.catch(() => {})]);
    if (running) samples.push({ t: Date.now() - started, mib: rssMib(e.pid) });
  }
  const [result] = await load;
  // an open loop that the service falls behind runs on until its last request is answered
  const ranMs = Date.now() - started;
  // every order placed is final within a bounded wait: a backlog would be memory of its own
  let left = await unfinished(e);
  for (const deadline = Date.now() + 30_000; left > 0 && Date.now() < deadline; left = await unfinished(e)) await sleep(500);
  const peak = Math.max(...samples.map((s) => s.mib));
  const secondHalf = samples.filter((s) => s.t >= ranMs / 2);
  const slope = slopePerMinute(secondHalf);
  const bad = failures(result);
  report.soak = { seconds, ranSeconds: ranMs / 1000, rate: RATE, connections: CONNECTIONS, load: result, samples, peakMib: peak, slopeMibPerMin: slope, unfinished: left };
  const behind = ranMs > seconds * 1000 * 1.2;
  log(
    `  ${result.requests} requests in ${f1(ranMs / 1000)} s${behind ? ` (due within ${seconds} s: the service fell behind the rate)` : ''} ` +
      `${summaryLine(result.latency)} ${bad}; orders not final 30 s after: ${left}`,
  );
  log(`  RSS ${samples.map((s) => Math.round(s.mib)).join(' ')} MiB: peak ${f1(peak)} MiB, second half ${slope.toFixed(2)} MiB/min`);
  const during = `${seconds >= 60 ? `${f1(seconds / 60)}-min` : `${seconds}-s`} mixed load`;
  const sound = bad === '' && left === 0;
  const notes = [bad, left ? `${left} orders not final` : '', behind ? `the load took ${Math.round(ranMs / 1000)} s` : ''].filter(Boolean);
  const note = notes.length ? ` (${notes.join(', ')})` : '';
  return [
    { name: `\`npm start\` (embedded) peak RSS through a ${during}`, value: `${f1(peak)} MiB${note}`, target: `≤ ${SOAK_PEAK_GOAL_MIB} MiB`, pass: peak <= SOAK_PEAK_GOAL_MIB && sound },
    {
      name: `\`npm start\` (embedded) RSS growth, second half of the ${during}`,
      value: `${slope.toFixed(2)} MiB/min (${secondHalf.length} samples)${note}`,
      target: `≤ ${SOAK_SLOPE_GOAL_MIB_PER_MIN} MiB/min`,
      pass: slope <= SOAK_SLOPE_GOAL_MIB_PER_MIN && sound,
    },
  ];
}
