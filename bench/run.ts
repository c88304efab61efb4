/**
 * `npm run bench` — the service against the bare limit, on real PostgreSQL and Redis.
 * See bench/README.md for the flags, the scenarios and the targets.
 *
 * Each phase is a module of its own; `main` runs them in order, passing the run's context (options,
 * ids, URLs, what was started) and, once the users are logged in, the scenario state (bench/scenario.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { clusterPhase } from './cluster.ts';
import { createContext, log, type RunContext } from './context.ts';
import { loginsPhase } from './logins.ts';
import { deadlocksPhase } from './measure.ts';
import { mixedPhase } from './mixed.ts';
import { oneAtATimeEmbedded, oneAtATimeOnService } from './one-at-a-time.ts';
import { parseOptions } from './options.ts';
import { LoadRunner } from './procs.ts';
import { readsPhase } from './reads.ts';
import { startReport, writeResults } from './report.ts';
import { scalePhase } from './scale.ts';
import { endScenarios, logIn } from './scenario.ts';
import { seedPhase } from './seed.ts';
import { sizeTargets } from './sizes.ts';
import { assertPortsFree, cleanup, startProcesses } from './services.ts';
import { startupPhase } from './startup.ts';
import { statementsPhase } from './statements.ts';
import { writesPhase } from './writes.ts';

async function main(ctx: RunContext): Promise<void> {
  const { phase, noCluster, scaleLarge } = ctx.opts;
  await assertPortsFree(ctx);
  const report = startReport(ctx);
  const loader = new LoadRunner(path.join(ctx.here, 'load.ts'));
  try {
    const client = await seedPhase(ctx, report);
    try {
      // before any load: the figure is the process's own, not the machine's
      const startup = await startupPhase(ctx, report);
      const statements = await statementsPhase(ctx, report);
      const embedded = await oneAtATimeEmbedded(ctx, loader, report); // and the soak phase
      const service = await startProcesses(ctx); // the baseline, then the service
      const b = await logIn(ctx, { client, loader, service, report });
      b.targets.push(startup, statements, ...embedded);
      await oneAtATimeOnService(b);
      if (phase('reads')) await readsPhase(b);
      if (phase('mixed')) await mixedPhase(b);
      if (phase('logins')) await loginsPhase(b);
      if (phase('cluster') && !noCluster) await clusterPhase(b);
      if (phase('writes')) await writesPhase(b);
      await endScenarios(b);
      if (scaleLarge > 0) report.scale = await scalePhase(b);
      // every service has stopped: their backends have reported their statistics
      b.targets.push(await deadlocksPhase(ctx, report), ...sizeTargets(ctx.root));
      writeResults(b);
    } finally {
      await client.end();
    }
  } finally {
    loader.close();
  }
}

const ctx = createContext(parseOptions());
let failed = false;
process.on('SIGINT', () => {
  log('\ninterrupted: cleaning up');
  void cleanup(ctx).finally(() => process.exit(130));
});
try {
  await main(ctx);
} catch (err) {
  failed = true;
  console.error(err instanceof Error ? err.stack : err);
} finally {
  await cleanup(ctx);
}
// the service's logs (an access-log line per request: hundreds of MB in a full run) are kept only
// when asked for, or when the run failed
if (failed || ctx.opts.keepLogs) log(`logs kept in ${ctx.logDir}`);
else fs.rmSync(ctx.logDir, { recursive: true, force: true });
process.exit(failed ? 1 : 0);
