/**
 * The bench's databases and processes: a fresh migrated database, the service (API and, in the split
 * topology, its job worker), the bare baseline, the load generator, and the clean-up at the end.
 * Everything started or created is recorded in the run's context, so `cleanup` finds it.
 */
import net from 'node:net';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { createDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { dbUrl, type RunContext } from './context.ts';
import { ADMIN_PASSWORD, HIGH_LIMIT, WEBHOOK_SECRET } from './options.ts';
import { startNode, stopProc, tail, waitReady, waitUntil, type Proc } from './procs.ts';
import { startCommand } from './start-command.ts';

async function adminQuery(ctx: RunContext, sqlText: string): Promise<void> {
  const c = new pg.Client({ connectionString: ctx.adminUrl.toString() });
  await c.connect();
  try {
    await c.query(sqlText);
  } finally {
    await c.end();
  }
}

/** pg_stat_database.deadlocks of the databases `names` (a name without statistics counts 0). */
export async function deadlockCounts(ctx: RunContext, names: string[]): Promise<Map<string, number>> {
  const c = new pg.Client({ connectionString: ctx.adminUrl.toString() });
  await c.connect();
  try {
    const { rows } = await c.query<{ datname: string; deadlocks: string }>('SELECT datname, deadlocks FROM pg_stat_database WHERE datname = ANY($1)', [names]);
    return new Map(names.map((n) => [n, Number(rows.find((r) => r.datname === n)?.deadlocks ?? 0)]));
  } finally {
    await c.end();
  }
}

/** Creates database `name`, migrates it, and returns a client connected to it. */
export async function freshDatabase(ctx: RunContext, name: string): Promise<pg.Client> {
  await adminQuery(ctx, `CREATE DATABASE ${name}`);
  ctx.databases.push(name);
  ctx.deadlocksAtStart.set(name, (await deadlockCounts(ctx, [name])).get(name) ?? 0);
  const handle = await createDatabase({ databaseUrl: dbUrl(ctx, name), dataDir: ctx.logDir, poolSize: 2 });
  await migrateToLatest(handle.db);
  await handle.close();
  const client = new pg.Client({ connectionString: dbUrl(ctx, name) });
  await client.connect();
  return client;
}

/** The npm script a process of `role` starts with: a fleet's API processes have their own (package.json). */
const scriptOf = (role: string) => (role === 'api' ? 'start:api' : 'start');

/** The service's role in this run's topology, unless `extra` names one. */
const roleOf = (ctx: RunContext, extra: Record<string, string>) => extra.ROLE ?? (ctx.opts.split ? 'api' : 'all');

export function serviceEnv(ctx: RunContext, database: string, extra: Record<string, string> = {}): Record<string, string> {
  const role = roleOf(ctx, extra);
  return {
    ...startCommand(ctx.root, scriptOf(role)).env,
    DATABASE_URL: dbUrl(ctx, database),
    REDIS_URL: ctx.redisUrl,
    PORT: String(ctx.opts.port),
    HOST: '127.0.0.1',
    ROLE: role,
    // the production default: one access-log line per request (src/http/access-log.ts), so the
    // bench measures the CPU that logging costs in production
    LOG_LEVEL: 'info',
    NODE_ENV: 'production',
    BCRYPT_ROUNDS: '10',
    ADMIN_EMAIL: 'admin@bench.example',
    ADMIN_PASSWORD,
    RATE_LIMIT_AUTHENTICATED: HIGH_LIMIT,
    RATE_LIMIT_ANONYMOUS: HIGH_LIMIT,
    RATE_LIMIT_WEBHOOK: HIGH_LIMIT,
    RATE_LIMIT_KEY_PREFIX: ctx.redisPrefix,
    SHOPIFY_WEBHOOK_SECRET: WEBHOOK_SECRET,
    DATA_DIR: path.join(ctx.logDir, 'data'),
    WEB_CONCURRENCY: '1',
    ...(process.env.BENCH_SERVICE_ENV ? (JSON.parse(process.env.BENCH_SERVICE_ENV) as Record<string, string>) : {}),
    ...extra,
  };
}

/**
 * The Node and V8 flags of the npm script for `role` (package.json); then BENCH_SERVICE_NODE_ARGS,
 * flags to compare (some, such as --heap-growing-percent, are refused in NODE_OPTIONS).
 */
export function serviceExecArgv(ctx: RunContext, role: string): string[] {
  const extra = (process.env.BENCH_SERVICE_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  return [...startCommand(ctx.root, scriptOf(role)).execArgv, ...extra];
}

/** Starts src/server.ts on `database` and waits until it is ready (its job worker too, topology split). */
export async function startService(ctx: RunContext, name: string, database: string, extra: Record<string, string> = {}): Promise<Proc> {
  const { port, split } = ctx.opts;
  const execArgv = [...serviceExecArgv(ctx, roleOf(ctx, extra)), ...profileArgs(ctx)];
  const script = path.join(ctx.root, 'src', 'server.ts');
  const { logDir } = ctx;
  const proc = startNode({ name, script, env: serviceEnv(ctx, database, extra), logDir, execArgv });
  ctx.procs.push(proc);
  await waitReady(proc, `${ctx.serviceUrl}/ready`);
  if (split) {
    // the job worker: no HTTP; started once the API has migrated the database
    const env = serviceEnv(ctx, database, { ...extra, ROLE: 'worker', WEB_CONCURRENCY: '1', PORT: String(port + 2) });
    const workerArgv = [...serviceExecArgv(ctx, 'worker'), ...profileArgs(ctx)];
    const worker = startNode({ name: `${name}-worker`, script, env, logDir, execArgv: workerArgv });
    ctx.procs.push(worker);
    ctx.workers.set(proc, worker);
    // ready once it prints that it has started (src/server.ts, on a non-TTY stdout)
    await waitUntil(worker, async () => tail(worker.logPath, 200).includes('Worker started'), 60_000, 100);
  }
  return proc;
}

/** Stops a service started by `startService`, with its job worker. */
export async function stopService(ctx: RunContext, proc: Proc): Promise<void> {
  const worker = ctx.workers.get(proc);
  ctx.workers.delete(proc);
  await Promise.all([stopProc(proc), worker && stopProc(worker)]);
  ctx.procs.splice(ctx.procs.indexOf(proc), 1);
  if (worker) ctx.procs.splice(ctx.procs.indexOf(worker), 1);
}

/** Throws when something already listens on `port` of 127.0.0.1. */
async function assertPortFree(port: number): Promise<void> {
  const server = net.createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
  } catch (err) {
    // a process left from an interrupted run would answer in place of the one this run starts
    throw new Error(`port ${port} is in use (a process left from an interrupted run?): ${(err as Error).message}`);
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** Throws unless the ports this run's processes listen on (the service's, the baseline's, the split worker's) are free. */
export async function assertPortsFree(ctx: RunContext): Promise<void> {
  for (const port of [ctx.opts.port, ctx.opts.basePort, ctx.opts.port + 2]) await assertPortFree(port);
}

/** With --cpu-prof, the flags that write a process's CPU profile into bench/results/prof at its exit. */
function profileArgs(ctx: RunContext): string[] {
  return ctx.opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${path.join(ctx.resultsDir, 'prof')}`] : [];
}

/** The baseline (bench/baseline.ts) on the main database, then the service. */
export async function startProcesses(ctx: RunContext): Promise<Proc> {
  const baseline = startNode({
    name: 'baseline',
    script: path.join(ctx.here, 'baseline.ts'),
    env: { DATABASE_URL: dbUrl(ctx, ctx.dbName), PORT: String(ctx.opts.basePort) },
    logDir: ctx.logDir,
    execArgv: profileArgs(ctx),
  });
  ctx.procs.push(baseline);
  await waitReady(baseline, `${ctx.baselineUrl}/health`);
  return startService(ctx, 'service', ctx.dbName);
}

/** Stops every process, drops the databases (unless --keep-db) and deletes this run's Redis keys. */
export async function cleanup(ctx: RunContext): Promise<void> {
  for (const p of [...ctx.procs].reverse()) await stopProc(p).catch(() => {});
  if (!ctx.opts.keepDb) {
    for (const name of ctx.databases) await adminQuery(ctx, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
  }
  // only this run's own keys
  const redis = new Redis(ctx.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${ctx.redisPrefix}*`, 'COUNT', 1000);
      if (keys.length) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } catch {
    // Redis gone: nothing to flush
  } finally {
    redis.disconnect();
  }
}
