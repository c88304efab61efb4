/**
 * The start-up phase: the resident memory of a fresh API process (ROLE=api, on the migrated main
 * database, before any request), 2 s after it listens. Several runs, the median counts: what every
 * API process of a fleet holds before it serves anything.
 */
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { elapsed, log, type RunContext } from './context.ts';
import { startNode, stopProc, tail, waitUntil } from './procs.ts';
import { rssMib } from './measure.ts';
import { f1, type Target } from './report.ts';
import { serviceEnv, serviceExecArgv } from './services.ts';

const RUNS = 3;
export const STARTUP_RSS_GOAL_MIB = 100;

export async function startupPhase(ctx: RunContext, report: Record<string, unknown>): Promise<Target> {
  log(`[${elapsed(ctx)}] start-up memory of an API process (ROLE=api), ${RUNS} runs`);
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    // any free port: it serves no request
    const env = serviceEnv(ctx, ctx.dbName, { ROLE: 'api', PORT: '0' });
    const proc = startNode({ name: `startup-${i}`, script: path.join(ctx.root, 'src', 'server.ts'), env, logDir: ctx.logDir, execArgv: serviceExecArgv(ctx, 'api') });
    ctx.procs.push(proc);
    try {
      // server.ts prints its docs line once it listens (stdout is not a TTY here)
      await waitUntil(proc, async () => tail(proc.logPath, 200).includes('Docs:'), 60_000, 50);
      await sleep(2000);
      samples.push(rssMib(proc.child.pid ?? 0));
    } finally {
      await stopProc(proc);
      ctx.procs.splice(ctx.procs.indexOf(proc), 1);
    }
  }
  const median = [...samples].sort((a, b) => a - b)[Math.floor(samples.length / 2)];
  report.startupRss = { runsMib: samples, medianMib: median };
  log(`  ROLE=api RSS 2 s after listening: ${samples.map(f1).join(', ')} MiB (median ${f1(median)})`);
  // informative: without a forced collection at start-up, the heap holds what loading left (decision 006)
  return {
    name: 'API process RSS after start-up (ROLE=api)',
    informative: true,
    value: `${f1(median)} MiB`,
    target: `≤ ${STARTUP_RSS_GOAL_MIB} MiB`,
    pass: median <= STARTUP_RSS_GOAL_MIB,
  };
}
