/**
 * What the scenario phases (reads, mixed, logins, cluster, writes, scale) share: the running service,
 * the load generator, the logged-in users and their request patterns, and where the results go; and
 * the helpers that build a load job, run it and measure its CPU cost.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { elapsed, log, type RunContext } from './context.ts';
import { cpuMeter, type CpuCost } from './cpu.ts';
import { rssMib, rssSampler, type QueryStats } from './measure.ts';
import { LOGGED_IN } from './options.ts';
import type { LoadRunner, Proc } from './procs.ts';
import { f1, writeChart, type ScenarioRow, type Target } from './report.ts';
import { stopService } from './services.ts';
import { readPatterns, sessions, writePatterns, type ReadPatterns, type Session, type WritePatterns } from './sessions.ts';
import type { LoadJob, LoadResult } from './types.ts';

/** The API process's peak resident memory during the scenarios on the main database. */
export const PEAK_RSS_GOAL_MIB = 250;
/** How long the API process is left idle after the last scenario before its memory is read again (informative). */
const IDLE_BEFORE_RSS_MS = 15_000;

export interface Bench {
  readonly ctx: RunContext;
  /** connected to the main bench database */
  readonly client: pg.Client;
  readonly loader: LoadRunner;
  /** the service's API process; the cluster phase replaces it */
  service: Proc;
  readonly users: Session[];
  readonly reads: ReadPatterns;
  readonly writes: WritePatterns;
  /** the API process's memory, sampled once the users are logged in, until the last scenario on the main database */
  readonly rss: ReturnType<typeof rssSampler>;
  /** bench/results/bench-<time>.json */
  readonly report: Record<string, unknown>;
  readonly targets: Target[];
  /** the scenario table and the chart */
  readonly rows: ScenarioRow[];
  /** the main queries timed during the mixed load */
  queriesUnderLoad?: QueryStats;
}

/** Logs in the users the load is sent as, and starts sampling the API process's memory. */
export async function logIn(ctx: RunContext, setup: { client: pg.Client; loader: LoadRunner; service: Proc; report: Record<string, unknown> }): Promise<Bench> {
  log(`[${elapsed(ctx)}] logging in ${LOGGED_IN} users`);
  const users = await sessions(ctx, setup.client, LOGGED_IN, ctx.opts.users);
  const b: Bench = {
    ctx,
    ...setup,
    users,
    reads: readPatterns(users),
    writes: writePatterns(ctx.runId, users, ctx.opts.users),
    rss: rssSampler(() => b.service.child.pid ?? 0),
    targets: [],
    rows: [],
  };
  return b;
}

/** A load job with the run's connections, duration and warm-up unless `over` says otherwise. */
export function job(b: Bench, name: string, url: string, pattern: LoadJob['pattern'], over: Partial<LoadJob> = {}): LoadJob {
  const { connections, duration, warmup } = b.ctx.opts;
  return { name, url, connections, durationSec: duration, warmupSec: warmup, pattern, ...over };
}

export async function runOne(b: Bench, j: LoadJob): Promise<LoadResult> {
  return (await b.loader.run([j]))[0];
}

/** CPU of the current service processes and of their database backends, per request. */
export function meter(b: Bench): Promise<{ stop: (requests: number) => Promise<CpuCost> }> {
  return cpuMeter({
    processes: () => ({ api: [b.service.child.pid ?? 0], worker: [b.ctx.workers.get(b.service)?.child.pid ?? 0] }),
    db: b.client,
    database: b.ctx.dbName,
  });
}

/** Requests sent in the warm-up and the measured time (the CPU window covers both). */
export function sent(b: Bench, r: LoadResult): number {
  return r.okRps * (r.durationSec + b.ctx.opts.warmup);
}

/** After the last scenario on the main database: the memory figure, the service stopped, the chart. */
export async function endScenarios(b: Bench): Promise<void> {
  const { ctx, report, rows } = b;
  const rss = b.rss.stop();
  log(`[${elapsed(ctx)}] the API process idle for ${IDLE_BEFORE_RSS_MS / 1000} s, then its RSS`);
  await sleep(IDLE_BEFORE_RSS_MS);
  const afterIdleMb = rssMib(b.service.child.pid ?? 0);
  report.rss = { ...rss, afterIdleMb };
  log(`  API process RSS: max ${f1(rss.maxMb)} MiB during the run, ${f1(rss.lastMb)} MiB at its end, ${f1(afterIdleMb)} MiB after ${IDLE_BEFORE_RSS_MS / 1000} s idle`);
  b.targets.push({
    name: 'API process peak RSS during the run',
    value: `${f1(rss.maxMb)} MiB (${f1(afterIdleMb)} MiB after ${IDLE_BEFORE_RSS_MS / 1000} s idle)`,
    target: `≤ ${PEAK_RSS_GOAL_MIB} MiB`,
    pass: rss.maxMb <= PEAK_RSS_GOAL_MIB,
  });
  report.scenarios = rows;
  await stopService(ctx, b.service);
  writeChart(ctx, rows);
}
