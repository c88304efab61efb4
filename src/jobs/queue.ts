import { randomUUID } from 'node:crypto';
import { PgBoss, fromKysely, fromPglite, type JobWithMetadata, type SendOptions } from 'pg-boss';
import type { FastifyBaseLogger } from 'fastify';
import type { Transaction } from 'kysely';
import type { Config } from '../config.ts';
import type { DatabaseHandle } from '../db/database.ts';
import { OutageLog } from '../db/outage-log.ts';
import { isDatabaseUnavailable } from '../db/errors.ts';
import type { Database } from '../db/schema.ts';
import { inBatchSpan, inJobSpan, withTraceContext } from './job-tracing.ts';
import { LapsedHeartbeats, takeUpLeftJobs } from './left-jobs.ts';
import { Wakes } from './wake.ts';
import { findJobLinks, insertJobLinks, type JobSubjects } from './jobs.repository.ts';
import { DEAD_LETTER_RETRY, HEARTBEAT_REFRESH_SECONDS, syncQueues, type QueueDefinition } from './job-policies.ts';
import { deadLetterQueueOf, type DeadLettered, type Job, type JobName, type JobPayloads } from './registry.ts';

export { HOUSEKEEPING_RETRY, INTERNAL_RETRY, type QueueDefinition } from './job-policies.ts';
export { givenUpJob, isLastAttempt, jobFailureMessage } from './registry.ts';
export type QueueJobCounts = Awaited<ReturnType<JobQueue['counts']>>[number];

type JobHandler<N extends JobName> = (job: Job<N>) => Promise<void>;

interface WorkOptions<N extends JobName> {
  /** At most this many jobs of one group (`group: { id }` when sent) run at once here; batchSize 1 only. */
  perGroup?: number;
  /** What the handler loads lazily (an API process never needs it), loaded before a worker's first fetch. */
  load?: () => Promise<unknown>;
  /** Runs a fetched batch of two or more jobs as one piece of work; when it throws, each job runs alone. */
  together?: (jobs: Job<N>[]) => Promise<void>;
  /** Which attempt of its work a job is, for its span, when the queue counts attempts itself. */
  attempt?: (job: Job<N>) => number;
}

interface Worker {
  name: JobName;
  batchSize: number;
  concurrency: number;
  handler: (job: JobWithMetadata<unknown>) => Promise<void>;
  opts: WorkOptions<JobName>;
}

const DEFAULT_BATCH_SIZE = 4;

async function eachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const runner = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, runner));
}

/** pg-boss on the service's own database, sending in the caller's transaction; its loops wake on NOTIFY and poll every JOB_POLLING_SECONDS. */
export class JobQueue {
  readonly boss: PgBoss;
  private readonly definitions = new Map<JobName, QueueDefinition>();
  private readonly workers: Worker[] = [];
  private readonly schedules: { name: JobName; cron: string }[] = [];
  private started = false;
  private readonly config: Config;
  private readonly log: FastifyBaseLogger;
  private readonly handle: DatabaseHandle;
  /** The process's one database outage log (the error handler reports to it too). */
  readonly databaseOutage: OutageLog;
  private readonly lapsedHeartbeats: LapsedHeartbeats;
  private readonly wakes: Wakes;

  constructor(handle: DatabaseHandle, config: Config, log: FastifyBaseLogger) {
    this.handle = handle;
    this.config = config;
    this.log = log;
    const runsWorkers = config.role !== 'api';
    // supervision (lapsed heartbeats, job counts): rarer on the embedded database, whose one process takes up a dead one's jobs at start
    const supervise = handle.pglite ? 5 : 2;
    const common = {
      schema: 'pgboss',
      // only a process that fetches jobs listens; an API process's sends notify the workers
      useListenNotify: runsWorkers,
      supervise: runsWorkers,
      schedule: runsWorkers,
      migrate: true,
      ...(runsWorkers ? { superviseIntervalSeconds: supervise, monitorIntervalSeconds: supervise, queueCacheIntervalSeconds: supervise } : {}),
    };
    this.boss = handle.pglite
      ? new PgBoss({ ...common, db: fromPglite(handle.pglite), backend: 'pglite' })
      : new PgBoss({ ...common, connectionString: handle.connectionString, max: config.jobQueuePoolSize });
    this.databaseOutage = new OutageLog(log, 'database', () => handle.ping());
    this.lapsedHeartbeats = new LapsedHeartbeats(log);
    const failed = (err: unknown, otherwise: () => void) => (isDatabaseUnavailable(err) ? this.databaseOutage.failed(err, 'job queue') : otherwise());
    this.wakes = new Wakes((name) =>
      this.boss.send(name, {}).then(
        () => undefined,
        (err: unknown) => failed(err, () => this.log.warn({ err, queue: name }, 'waking a job queue failed; its schedule runs it')),
      ),
    );
    // while the database is down every fetch loop fails on each poll: one line per outage, not per error
    this.boss.on('error', (err: Error) => failed(err, () => this.log.error({ err }, 'job queue error')));
  }

  define(def: QueueDefinition): void {
    this.definitions.set(def.name, def);
  }

  /** Registers a handler for each job, at most `concurrency` at once; a throw fails that job alone, for a retry. */
  work<N extends JobName>(name: N, handler: JobHandler<N>, concurrency = 1, opts: WorkOptions<N> = {}): void {
    const def = this.definitions.get(name);
    if (!def) throw new Error(`queue ${name} is not defined`);
    const batchSize = def.batchSize ?? Math.max(DEFAULT_BATCH_SIZE, concurrency);
    if (opts.perGroup !== undefined && (batchSize !== 1 || opts.perGroup > concurrency)) {
      throw new Error(`queue ${name}: a per-group limit needs batchSize 1 and at most ${concurrency} (its concurrency)`);
    }
    if (opts.together !== undefined && batchSize === 1) throw new Error(`queue ${name}: running jobs together needs batches (batchSize above 1)`);
    this.workers.push({ name, batchSize, concurrency, handler: handler as Worker['handler'], opts: opts as WorkOptions<JobName> });
  }

  /** Jobs of the defined queue `name` that pg-boss gives up on go to its dead-letter queue, where `handler` records the outcome. */
  workGivenUp<N extends DeadLettered>(name: N, handler: (job: Job<N>) => Promise<unknown>): void {
    const def = this.definitions.get(name);
    if (!def) throw new Error(`queue ${name} is not defined`);
    const deadLetter = deadLetterQueueOf(name);
    this.define({ ...def, deadLetter });
    this.define({ name: deadLetter, ...DEAD_LETTER_RETRY });
    this.work(deadLetter, handler as unknown as JobHandler<typeof deadLetter>);
  }

  scheduleCron(name: JobName, cron: string): void {
    this.schedules.push({ name, cron });
  }

  /** Starts pg-boss and, in a process that runs jobs, its fetch loops; returns the left jobs taken up, per queue. */
  async start(): Promise<Record<string, number>> {
    await this.boss.start();
    await syncQueues(this.boss, [...this.definitions.values()], this.config.jobRetentionDays, this.log);
    this.started = true;
    if (this.config.role === 'api') return {};
    // on the embedded database this process holds the data directory alone (its lock): a running job was left by a process that died
    const takenUp = this.handle.pglite ? await takeUpLeftJobs(this.boss) : {};
    await Promise.all(this.workers.map((w) => w.opts.load?.()));
    for (const w of this.workers) await this.startLoops(w);
    for (const s of this.schedules) await this.boss.schedule(s.name, s.cron);
    return takenUp;
  }

  /** A batched queue gets one loop running `concurrency` jobs at a time; an unbatched one `concurrency` loops, so no job waits behind a slow one. */
  private async startLoops(w: Worker): Promise<void> {
    const common = {
      includeMetadata: true,
      pollingIntervalSeconds: this.config.jobPollingSeconds,
      notifyPollingIntervalSeconds: this.config.jobPollingSeconds,
      heartbeatRefreshSeconds: HEARTBEAT_REFRESH_SECONDS,
    } as const;
    const options =
      w.batchSize > 1
        ? { ...common, batchSize: w.batchSize, burstWhenBatchFull: true }
        : { ...common, batchSize: 1, localConcurrency: w.concurrency, burstWhenReadyExceeds: 1, ...(w.opts.perGroup !== undefined ? { localGroupConcurrency: w.opts.perGroup } : {}) };
    const linkWhenTaken = this.definitions.get(w.name)?.linkWhenTaken === true;
    await this.boss.work<unknown, unknown, typeof options>(w.name, options, async (jobs) => {
      this.lapsedHeartbeats.note(w.name, jobs);
      // a throw fails the batch, and pg-boss retries its jobs
      if (linkWhenTaken) await insertJobLinks(this.handle.db, w.name, jobs);
      return this.runBatch(w, jobs);
    });
  }

  private async runBatch(w: Worker, jobs: JobWithMetadata<unknown>[]): Promise<void> {
    const together = w.opts.together;
    if (together !== undefined && jobs.length > 1) {
      try {
        await inBatchSpan(w.name, jobs, () => together(jobs as Job<JobName>[]));
        return;
      } catch (err) {
        this.log.info({ err, queue: w.name, jobs: jobs.length }, 'job batch not run together; its jobs run one by one');
      }
    }
    await eachLimited(jobs, w.concurrency, (job) => this.run(w, job));
  }

  /** One attempt of one job; a failed attempt is failed by id, so pg-boss retries it. */
  private async run(w: Worker, job: JobWithMetadata<unknown>): Promise<void> {
    try {
      const attempt = w.opts.attempt?.(job as Job<JobName>);
      await inJobSpan(w.name, job, () => w.handler(job), attempt);
    } catch (err) {
      this.log.warn({ err, queue: w.name, jobId: job.id, attempt: job.retryCount + 1 }, 'job attempt failed');
      await this.boss.fail(w.name, job.id, { message: err instanceof Error ? err.message : String(err) });
    }
  }

  /** Enqueues inside `trx` (job and link exist only if it commits); `traceParent`: a stored traceparent the run continues, linked to the sender's span. */
  async send<N extends JobName>(trx: Transaction<Database>, name: N, data: JobPayloads[N], options: SendOptions & { traceParent?: string | null } = {}): Promise<string> {
    const { traceParent, ...sendOptions } = options;
    const id = options.id ?? randomUUID();
    await this.boss.send(name, withTraceContext(data, traceParent), { ...sendOptions, id, db: fromKysely(trx) });
    if (!this.definitions.get(name)?.linkWhenTaken) await insertJobLinks(trx, name, [{ id, data }]);
    return id;
  }

  /** Enqueues outside any transaction, for jobs that follow a committed change. */
  async sendNow<N extends JobName>(name: N, data: JobPayloads[N], options: SendOptions = {}): Promise<string> {
    return this.handle.db.transaction().execute((trx) => this.send(trx, name, data, options));
  }

  /** Has a worker run the `stately` queue `name` after everything this process has committed so far (src/jobs/wake.ts). */
  wake(name: JobName): void {
    if (this.started) this.wakes.wake(name);
  }

  /** Per queue: jobs waiting (new, or for a retry), running, and failed (still kept), as pg-boss's supervision last counted them. */
  async counts() {
    const queues = await this.boss.getQueues([...this.definitions.keys()]);
    return queues.map((q) => ({ queue: q.name, queued: q.queuedCount, active: q.activeCount, failed: q.failedCount })).sort((a, b) => a.queue.localeCompare(b.queue));
  }

  /** The jobs pg-boss still keeps about an order (links and dead-letter copies), oldest first. */
  async jobsAbout(about: JobSubjects): Promise<JobWithMetadata<unknown>[]> {
    const links = await findJobLinks(this.handle.db, about);
    const linked = await Promise.all(links.map((l) => this.boss.getJobById(l.queue, l.job_id)));
    const copies = await Promise.all([
      this.boss.findJobs(deadLetterQueueOf('order-process'), { data: { orderId: about.orderId } }),
      ...about.inboundWebhookIds.map((id) => this.boss.findJobs(deadLetterQueueOf('webhook-inbound-process'), { data: { inboundWebhookId: id } })),
    ]);
    const jobs = [...linked.filter((j) => j !== null), ...copies.flat()];
    return jobs.sort((a, b) => a.createdOn.getTime() - b.createdOn.getTime() || a.id.localeCompare(b.id));
  }

  /** Started, and pg-boss's own connections reach its tables (on PostgreSQL they are a separate pool). */
  async ping(): Promise<void> {
    if (!this.started) throw new Error('job queue not started');
    await this.boss.getDb().executeSql('SELECT 1', []);
  }

  /** Lets running jobs finish; fails those still running at the timeout (below server.ts's 30 s grace) for a retry elsewhere. */
  async stop(timeoutMs = 20000): Promise<void> {
    this.databaseOutage.stop();
    if (!this.started) return;
    this.started = false;
    await this.wakes.settled();
    await this.boss.stop({ graceful: true, timeout: timeoutMs, close: true });
    this.lapsedHeartbeats.flush();
  }
}
