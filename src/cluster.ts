import cluster, { type Worker } from 'node:cluster';
import type { Config } from './config.ts';

type ChildRole = 'api' | 'worker';

const RESTART_DELAY_MS = 1000;

/**
 * WEB_CONCURRENCY=N (N > 1): this process only supervises N forked API processes sharing the port and, with ROLE=all,
 * one job worker, so jobs run in one place. The first API process starts alone, so migrations and the administrator
 * bootstrap never race; a dead process is forked again; SIGTERM is passed on; the supervisor exits once all have shut down.
 */
export function runClusterPrimary(config: Config): Promise<never> {
  const roles = new Map<Worker, ChildRole>();
  let stopping = false;
  let exitCode = 0;

  const fork = (role: ChildRole): Worker => {
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
  // SIGINT (Ctrl-C) reaches the whole process group already; a second one would cut shutdown short
  process.on('SIGTERM', () => stop(true));
  process.on('SIGINT', () => stop(false));

  fork('api').once('listening', () => {
    firstListening = true;
    if (stopping) return;
    for (let i = 1; i < config.webConcurrency; i++) fork('api');
    if (config.role === 'all') fork('worker');
    console.error(
      `cluster: supervisor ${process.pid} runs ${config.webConcurrency} API processes` +
        (config.role === 'all' ? ' and 1 job worker process' : ''),
    );
  });
  return new Promise<never>(() => {});
}
