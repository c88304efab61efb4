import { PgBoss, fromKysely, fromPglite, type JobWithMetadata, type KyselyTransactionLike, type SendOptions } from 'pg-boss';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.ts';
import type { DatabaseHandle } from '../db/database.ts';

/** Internal jobs: the spec's "at most 3 attempts", with exponential backoff between them. */
export const INTERNAL_RETRY = { retryLimit: 2, retryDelay: 1, retryBackoff: true } as const;

/**
 * How a job whose worker died (SIGKILL, OOM, lost host) gets back to another worker. pg-boss's
 * default is to leave it `active` until `expireInSeconds` (15 minutes) passes. A running handler
 * refreshes its heartbeat every `heartbeatSeconds / 2`; a job without a fresh heartbeat is failed
 * (and retried) by the next supervision pass of any worker, so a dead worker's jobs return within
 * about a minute, while a live but slow handler keeps its job. `expireInSeconds` still bounds a
 * handler that hangs while its process lives.
 */
export const JOB_LIVENESS = { heartbeatSeconds: 10, expireInSeconds: 300 } as const;

export interface QueueDefinition {
  name: string;
  /**
   * Jobs fetched per poll (default 4, and at least the worker's concurrency). The jobs of a batch
   * run `concurrency` at a time in one fetch loop, and a loop that comes back with a full batch
   * fetches again at once, so a backlog drains at processing speed. 1: slow, I/O-bound jobs
   * (outgoing HTTP), each of the `concurrency` loops fetching one job, so one slow job holds no
   * other behind it.
   */
  batchSize?: number;
  retryLimit?: number;
  retryDelay?: number;
  retryBackoff?: boolean;
  expireInSeconds?: number;
  heartbeatSeconds?: number;
}

export type JobHandler<T> = (job: JobWithMetadata<T>) => Promise<void>;

const DEFAULT_BATCH_SIZE = 4;

interface Worker {
  name: string;
  batchSize: number;
  handler: JobHandler<unknown>;
  concurrency: number;
}

/** Runs `fn` over `items`, at most `limit` at a time. */
async function eachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const runner = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, runner));
}

/** True when this attempt is the job's last one: a failure now is final. */
export function isLastAttempt(job: JobWithMetadata<unknown>): boolean {
  return job.retryCount >= job.retryLimit;
}

/**
 * pg-boss on the service's own database. Jobs are sent inside the caller's transaction
 * (`send(trx, …)`), so the job commits or rolls back with the change that caused it.
 */
export class JobQueue {
  readonly boss: PgBoss;
  private readonly definitions = new Map<string, QueueDefinition>();
  private readonly workers: Worker[] = [];
  private readonly schedules: { name: string; cron: string }[] = [];
  private started = false;
  private readonly config: Config;
  private readonly log: FastifyBaseLogger;

  constructor(handle: DatabaseHandle, config: Config, log: FastifyBaseLogger) {
    this.config = config;
    this.log = log;
    const runsWorkers = config.role !== 'api';
    const common = {
      useListenNotify: true,
      supervise: runsWorkers,
      schedule: runsWorkers,
      migrate: true,
      monitorIntervalSeconds: 60,
    };
    this.boss = handle.pglite
      ? new PgBoss({ ...common, db: fromPglite(handle.pglite), backend: 'pglite' })
      : // Its own pool's statements stay unnamed: pg-boss settles jobs with `id = ANY($2)`, and a
        // generic plan, which cannot see how long that array is, scans every retained job of the queue.
        new PgBoss({ ...common, connectionString: handle.connectionString, max: 10 });
    this.boss.on('error', (err: Error) => this.log.error({ err }, 'job queue error'));
  }

  define(def: QueueDefinition): void {
    this.definitions.set(def.name, def);
  }

  /** Registers a handler; it runs only in processes whose role includes the worker. */
  work<T>(name: string, handler: JobHandler<T>, concurrency = 1): void {
    if (!this.definitions.has(name)) throw new Error(`queue ${name} is not defined`);
    const batchSize = this.definitions.get(name)?.batchSize ?? DEFAULT_BATCH_SIZE;
    this.workers.push({ name, batchSize, handler: handler as JobHandler<unknown>, concurrency });
  }

  scheduleCron(name: string, cron: string): void {
    this.schedules.push({ name, cron });
  }

  async start(): Promise<void> {
    await this.boss.start();
    for (const def of this.definitions.values()) {
      const { name, batchSize: _batchSize, ...options } = def;
      await this.boss.createQueue(name, { ...INTERNAL_RETRY, ...JOB_LIVENESS, ...options, notify: true });
    }
    this.started = true;
    if (this.config.role === 'api') return;
    for (const w of this.workers) {
      // pg-boss wakes every fetch loop of a queue on each NOTIFY: N loops would send N fetches per
      // new job (N - 1 of them empty), so short jobs share one loop and run concurrently within it.
      // The loop fetches again when its whole batch is done, so one job waiting on a row lock holds
      // the next fetch until it ends; these jobs touch only the database and hold rows briefly.
      const oneByOne = w.batchSize === 1;
      const options = {
        batchSize: oneByOne ? 1 : Math.max(w.batchSize, w.concurrency),
        burstWhenBatchFull: true,
        includeMetadata: true,
        localConcurrency: oneByOne ? w.concurrency : 1,
        pollingIntervalSeconds: this.config.jobPollingSeconds,
        // NOTIFY wakes workers for new jobs only; retries and delayed jobs are found by this
        // backstop poll, so it must be shorter than the first retry delay or it masks the backoff
        notifyPollingIntervalSeconds: Math.max(this.config.jobPollingSeconds, INTERNAL_RETRY.retryDelay),
      } as const;
      await this.boss.work<unknown, unknown, typeof options>(w.name, options, async (jobs) => {
        // Each job settles on its own: a failed one is failed (and so retried) here, by id, without
        // failing its batch-mates; pg-boss then completes the batch's jobs that are still active.
        // Not `perJobResults`: pg-boss 12.35 settles those through a join with a JSON recordset that
        // the planner cannot size, and it scans every retained job of the queue (linear in history).
        await eachLimited(jobs, oneByOne ? 1 : w.concurrency, async (job) => {
          try {
            await w.handler(job);
          } catch (err) {
            this.log.warn({ err, queue: w.name, jobId: job.id, attempt: job.retryCount + 1 }, 'job attempt failed');
            await this.boss.fail(w.name, job.id, { message: err instanceof Error ? err.message : String(err) });
          }
        });
      });
    }
    for (const s of this.schedules) await this.boss.schedule(s.name, s.cron);
  }

  /** Enqueues inside `trx` (the job exists only if the transaction commits). */
  async send<T extends object>(trx: KyselyTransactionLike, name: string, data: T, options: SendOptions = {}): Promise<string | null> {
    return this.boss.send(name, data, { ...options, db: fromKysely(trx) });
  }

  /** Enqueues outside any transaction (for jobs that follow a committed change). */
  async sendNow<T extends object>(name: string, data: T, options: SendOptions = {}): Promise<string | null> {
    return this.boss.send(name, data, options);
  }

  async ping(): Promise<void> {
    if (!this.started) throw new Error('job queue not started');
  }

  /**
   * Stops fetching, lets running jobs finish (up to the timeout), then fails the ones still running
   * so they are retried at once elsewhere, and closes. The timeout stays below the 30 s grace period
   * of server.ts, so this happens before the process is forced to exit.
   */
  async stop(timeoutMs = 20000): Promise<void> {
    if (!this.started) return;
    this.started = false;
    await this.boss.stop({ graceful: true, timeout: timeoutMs, close: true });
  }
}

export type { JobWithMetadata };
