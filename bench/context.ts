/**
 * The run's context, passed to every phase: its options, ids, URLs and directories, and the lists of
 * what it started and created (stopped and dropped by `cleanup` in bench/services.ts).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Options } from './options.ts';
import type { Proc } from './procs.ts';

export interface RunContext {
  readonly opts: Options;
  readonly runId: string;
  /** the main bench database; the scale phase's is `${dbName}_scale` */
  readonly dbName: string;
  /** the server and credentials every bench database is created with */
  readonly adminUrl: URL;
  readonly redisUrl: string;
  /** the service's rate-limit keys: only these are deleted at the end */
  readonly redisPrefix: string;
  readonly serviceUrl: string;
  readonly baselineUrl: string;
  /** bench/ */
  readonly here: string;
  /** the repository */
  readonly root: string;
  /** the processes' log files (and the service's DATA_DIR) */
  readonly logDir: string;
  readonly resultsDir: string;
  readonly started: number;
  /** the running processes, in start order */
  readonly procs: Proc[];
  /** the ROLE=worker process beside each API process (topology split) */
  readonly workers: Map<Proc, Proc>;
  /** the databases created, dropped at the end unless --keep-db */
  readonly databases: string[];
  /** each database's pg_stat_database.deadlocks when it was created (compared at the end of the run) */
  readonly deadlocksAtStart: Map<string, number>;
}

/** Creates the run's ids and its log and results directories. */
export function createContext(opts: Options): RunContext {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const runId = `${Date.now().toString(36)}${crypto.randomBytes(3).toString('hex')}`;
  const adminUrl = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'oas-bench-'));
  const resultsDir = path.join(here, 'results');
  fs.mkdirSync(resultsDir, { recursive: true });
  return {
    opts,
    runId,
    dbName: `oas_bench_${runId}`,
    adminUrl,
    redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    redisPrefix: `oas:bench:${runId}`,
    serviceUrl: `http://127.0.0.1:${opts.port}`,
    baselineUrl: `http://127.0.0.1:${opts.basePort}`,
    here,
    root: path.dirname(here),
    logDir,
    resultsDir,
    started: Date.now(),
    procs: [],
    workers: new Map(),
    databases: [],
    deadlocksAtStart: new Map(),
  };
}

/** The URL of database `name` on the admin URL's server. */
export function dbUrl(ctx: RunContext, name: string): string {
  const u = new URL(ctx.adminUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

export function log(msg: string): void {
  process.stdout.write(`${msg}\n`);
}

/** Seconds since the run started, as printed at the start of each step. */
export function elapsed(ctx: RunContext): string {
  return `${((Date.now() - ctx.started) / 1000).toFixed(0)}s`;
}
