import cluster, { type Worker } from 'node:cluster';
import type { Config } from './config.ts';

/**
 * WEB_CONCURRENCY=N (N > 1): this process becomes a small supervisor (node:cluster primary) that
 * serves nothing itself. It forks N API processes (ROLE=api) that share the listening port, and —
 * when the configured role is `all` — one job worker process (ROLE=worker), so background jobs run
 * in exactly one place instead of competing with the request paths on every core. With ROLE=api the
 * supervisor forks API processes only: workers are then started separately (ROLE=worker).
 *
 * Each forked process runs the ordinary server (src/server.ts with its own config, pools and
 * graceful shutdown). The first API process is started alone and the others only once it listens:
 * migrations and the administrator bootstrap then never race. A process that dies unexpectedly is
 * forked again (at most once a second). SIGTERM is passed on to every process; the supervisor exits
 * once all of them have finished their graceful shutdown.
 */
export function shouldRunCluster(config: Config): boolean {
  return cluster.isPrimary && config.webConcurrency > 1 && config.role !== 'worker';
}

type ChildRole = 'api' | 'worker';

const RESTART_DELAY_MS = 1000;

/** Runs the supervisor until every forked process has exited, then ends the process. */
export function runClusterPrimary(config: Config): Promise<never> {
  const roles = new Map<Worker, ChildRole>();
  let stopping = false;
  let exitCode = 0;

  const fork = (role: ChildRole): Worker => {
    // the children must not fork again: they are not cluster primaries, and WEB_CONCURRENCY=1 says so
    const worker = cluster.fork({ ROLE: role, WEB_CONCURRENCY: '1' });
    roles.set(worker, role);
    return worker;
  };

  let firstListening = false;
  cluster.on('exit', (worker, code, signal) => {
    const role = roles.get(worker) ?? 'api';
    roles.delete(worker);
    if (!firstListening && !stopping) {
      // the first process could not start (configuration, database, port): do not loop on it
      console.error(`cluster: the first API process failed to start (${signal ?? `code ${code}`})`);
      stopping = true;
      exitCode = 1;
    }
    if (stopping) {
      if (roles.size === 0) process.exit(exitCode);
      return;
    }
    console.error(`cluster: ${role} process ${worker.process.pid} exited (${signal ?? `code ${code}`}); starting another`);
    setTimeout(() => {
      if (!stopping) fork(role);
    }, RESTART_DELAY_MS).unref();
  });

  const stop = (forward: boolean) => {
    if (stopping) return;
    stopping = true;
    if (roles.size === 0) process.exit(exitCode);
    if (forward) for (const worker of roles.keys()) worker.process.kill('SIGTERM');
  };
  // SIGTERM (orchestrators, `kill`) reaches this process only: pass it on. Ctrl-C sends SIGINT to the
  // whole foreground process group, so every child already has it; a second signal would make their
  // graceful shutdown give up, so SIGINT is not passed on.
  process.on('SIGTERM', () => stop(true));
  process.on('SIGINT', () => stop(false));

  const first = fork('api');
  first.once('listening', () => {
    firstListening = true;
    if (stopping) return;
    for (let i = 1; i < config.webConcurrency; i++) fork('api');
    if (config.role === 'all') fork('worker');
    console.error(
      `cluster: supervisor ${process.pid} runs ${config.webConcurrency} API processes` +
        (config.role === 'all' ? ' and 1 job worker process' : ''),
    );
  });
  // the process ends through process.exit in the exit handler above
  return new Promise<never>(() => {});
}
