/**
 * The cluster phase (multi-core): the same GET /auth/me load on one API process, then on
 * WEB_CONCURRENCY=2, measured back to back. It has no target.
 */
import { elapsed, log } from './context.ts';
import { f1 } from './report.ts';
import { job, runOne, type Bench } from './scenario.ts';
import { startService, stopService } from './services.ts';

export async function clusterPhase(b: Bench): Promise<void> {
  const { ctx } = b;
  const me = b.reads['GET /auth/me'].service;
  log(`[${elapsed(ctx)}] GET /auth/me: 1 process, then WEB_CONCURRENCY=2 (2 API processes + 1 job worker)`);
  const one = await runOne(b, job(b, 'GET /auth/me (1 process)', ctx.serviceUrl, me));
  await stopService(ctx, b.service);
  b.service = await startService(ctx, 'service-cluster', ctx.dbName, { WEB_CONCURRENCY: '2' });
  const two = await runOne(b, job(b, 'GET /auth/me (2 processes)', ctx.serviceUrl, me));
  const speedup = two.okRps / one.okRps;
  b.report.cluster = { one, two, speedup };
  log(`  1 process ${Math.round(one.okRps)} req/s (p99 ${f1(one.latency.p99)} ms) → 2 processes ${Math.round(two.okRps)} req/s (p99 ${f1(two.latency.p99)} ms): ${speedup.toFixed(2)}×`);
  // the writes that follow are measured on one API process, as before this phase
  if (ctx.opts.phase('writes')) {
    await stopService(ctx, b.service);
    b.service = await startService(ctx, 'service', ctx.dbName);
  }
}
