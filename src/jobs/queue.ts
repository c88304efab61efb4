import { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, propagation, trace } from '@opentelemetry/api';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { PgBoss, fromKysely, fromPglite, type JobWithMetadata, type SendOptions } from 'pg-boss';
import { notifyChannelSql } from 'pg-boss/dist/plans.js';
import type { FastifyBaseLogger } from 'fastify';
import type { Expression, RawBuilder, Transaction } from 'kysely';
import type { Config } from '../config.ts';
import type { SqlPart } from '../db/compiled.ts';
import type { DatabaseHandle } from '../db/database.ts';
import { JobFetchPreparingClient } from '../db/prepared.ts';
import type { Database } from '../db/schema.ts';
import { ensureJobIndexes } from './job-indexes.ts';
import { insertJobLink, jobInsertOf, linkedJobCtes, readyToFetch, type JobInsert } from './jobs.repository.ts';
import { deadLetterQueueOf, jobSubjectOf, type DeadLettered, type Job, type JobName, type JobPayloads, type JobSubject } from './registry.ts';

/** A job sent by the statement that creates its subject (`JobQueue.linkedJob`). */
export interface LinkedJob<N extends JobName> {
  readonly name: N;
  readonly id: string;
  /**
   * The job, its link and its NOTIFY as CTEs for that statement (`linkedJobCtes`); `subjects` yields
   * the subject's id as `id`. They end with `alongside`, which the statement must read.
   */
  readonly ctes: (subjects: Expression<{ id: number }>) => RawBuilder<unknown>;
  /** `ctes` as a part of a statement compiled once per shape: the job's id and data are parameters */
  readonly part: SqlPart<unknown, Expression<{ id: number }>>;
}

/** Internal jobs: the spec's "at most 3 attempts", with exponential backoff between them. */
export const INTERNAL_RETRY = { retryLimit: 2, retryDelay: 1, retryBackoff: true } as const;

/**
 * Scheduled housekeeping (the retention purges): a run that failed (the database away) is as good a
 * minute later, then two.
 */
export const HOUSEKEEPING_RETRY = { retryDelay: 60 } as const;

/**
 * How a job whose worker died (SIGKILL, OOM, lost host) gets back to another worker. pg-boss's
 * default is to leave it `active` until `expireInSeconds` (15 minutes) passes. A running handler
 * refreshes its heartbeat every `heartbeatSeconds / 2`; a job without a fresh heartbeat is failed
 * (and retried) by the next supervision pass of any worker, so a dead worker's jobs return within
 * about a minute, while a live but slow handler keeps its job. `expireInSeconds` still bounds a
 * handler that hangs while its process lives.
 */
export const JOB_LIVENESS = { heartbeatSeconds: 10, expireInSeconds: 300 } as const;

/**
 * Dead-letter queues record an outcome (a row marked failed) for a job its own queue gave up on, so
 * they keep trying longer than the jobs they stand in for: 9 attempts, the last about 20 to 40
 * minutes after the first, enough to outlast a database failover. (pg-boss gives a dead-lettered
 * copy its dead-letter queue's retry limit, delay and backoff, but not `retryDelayMax`: no cap here.)
 */
export const DEAD_LETTER_RETRY = { retryLimit: 8, retryDelay: 5, retryBackoff: true } as const;

/**
 * pg-boss never deletes a finished job itself: the service's retention purge does, in bounded
 * batches, after JOB_RETENTION_DAYS (see src/modules/operations/). pg-boss's own deletion would be
 * one unbounded DELETE per queue, and would take failed jobs out of the count of jobs failed for good.
 */
export const JOB_DELETION = { deleteAfterSeconds: 0 } as const;

/**
 * How often each fetch loop polls its queue by itself: only if neither a NOTIFY nor the sweep for jobs
 * come due (`JobQueue.sweepDue`) reached it. Without a LISTEN connection (it dropped, or the
 * database has none) pg-boss polls every `jobPollingSeconds` instead.
 */
const BACKSTOP_POLL_SECONDS = 60;

/** Seconds between two sweeps for jobs come due: `jobPollingSeconds`, and at least the first retry delay. */
function dueSweepSeconds(config: Config): number {
  return Math.max(config.jobPollingSeconds, INTERNAL_RETRY.retryDelay);
}

/** The schema of pg-boss's tables (its default; `attachDeadLetter` writes to one of them). */
const BOSS_SCHEMA = 'pgboss';

export interface QueueDefinition {
  name: JobName;
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
  /**
   * A queue (defined too) that pg-boss copies each job of this one into, with its data, when it gives
   * up on it for good: the last attempt threw, or it was failed by expiry (`expireInSeconds`), by a
   * stale heartbeat (its worker died) or by a shutdown that could not wait for it. The dead-letter
   * job's `sourceOutput` is the given-up job's last error and `sourceCreatedOn` its creation time.
   */
  deadLetter?: JobName;
}

export type JobHandler<N extends JobName> = (job: Job<N>) => Promise<void>;

const DEFAULT_BATCH_SIZE = 4;

interface Worker {
  name: JobName;
  batchSize: number;
  handler: (job: JobWithMetadata<unknown>) => Promise<void>;
  concurrency: number;
  perGroup: number | undefined;
  load: (() => Promise<unknown>) | undefined;
  lingerMs: number;
  /** when its fetch loop last fetched (performance.now()), and the jobs per ms it has fetched lately, for `lingerFor` */
  fetchedAt: number | undefined;
  perMs: number;
  batch: ((jobs: JobWithMetadata<unknown>[]) => Promise<ReadonlySet<string>>) | undefined;
  /** the id pg-boss gave its fetch loop (of a batched queue: its only worker), for `notifyWorker`; set once `work` returns */
  loop: string | undefined;
}

export interface WorkOptions {
  /**
   * At most this many jobs of one group (`group: { id }` when sent) run at once in this process;
   * jobs of a group at its limit are left in the queue for the next fetch, so they hold no fetch
   * loop while other groups' jobs run. Only for queues fetched one job at a time (batchSize 1),
   * and at most `concurrency`.
   */
  perGroup?: number;
  /**
   * What the handler loads lazily (a module an API process never needs): a process that runs this
   * queue's jobs loads it at start, before its first fetch, so the first job does not stall the
   * event loop, and every job running beside it, for the load.
   */
  load?: () => Promise<unknown>;
  /**
   * After a batch that was not full, the fetch loop waits before it completes the batch's jobs and
   * fetches again (a NOTIFY during the wait no longer starts a fetch at once; it makes the fetch
   * after the wait): until a full batch can be expected at the rate jobs have lately come in (a
   * moving average over the loop's fetches), and at most this long (`lingerFor`). Jobs that arrive
   * a few milliseconds apart are then fetched, run (with `batch`) and completed together, a
   * statement each per batch instead of per job. The handler has run by then: the wait delays only
   * pg-boss's completion of those jobs, and the start of jobs sent during it, by at most this long.
   * The first batch after a quiet spell does not wait (`lingerFor`).
   * 0: no wait. Only for queues fetched in batches (batchSize above 1).
   */
  lingerMs?: number;
}

/** `WorkOptions` of a queue whose jobs can also be run together (`batch`). */
export interface BatchWorkOptions<N extends JobName> extends WorkOptions {
  /**
   * Runs a fetched batch of two or more jobs together, before the handler runs any of them: it
   * returns the ids of the jobs it completed, and the handler then runs each of the others as
   * usual. A throw completes none (it is logged). For work that costs less done together, where
   * each job's own handler still finds and finishes whatever the batch left. Only for queues
   * fetched in batches (batchSize above 1).
   */
  batch?: (jobs: Job<N>[]) => Promise<ReadonlySet<string>>;
}

/**
 * The field of a job's data that carries the W3C trace context (`traceparent`, `tracestate`) of
 * the request or job that sent it, so the job's run continues that trace in whichever process
 * runs it. Present only when tracing is on (src/telemetry.ts); handlers never read it.
 */
export const TRACE_CONTEXT_FIELD = 'traceContext';

const tracer = trace.getTracer('order-account-service/jobs');

/** `data` with the current trace context added; `data` itself when there is none (tracing off). */
function withTraceContext<T>(data: T): T {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ? { ...data, [TRACE_CONTEXT_FIELD]: carrier } : data;
}

/** The trace context a job was sent with (the root context when it carries none). */
function traceContextOf(data: unknown) {
  const carrier = data !== null && typeof data === 'object' ? (data as Record<string, unknown>)[TRACE_CONTEXT_FIELD] : undefined;
  return carrier !== null && typeof carrier === 'object' ? propagation.extract(ROOT_CONTEXT, carrier) : ROOT_CONTEXT;
}

/** A queue's settings as pg-boss keeps them: the service's defaults, then the definition's own. */
function queueSettings(def: QueueDefinition) {
  const { name: _name, batchSize: _batchSize, ...own } = def;
  return { ...INTERNAL_RETRY, ...JOB_LIVENESS, ...JOB_DELETION, ...own, notify: true };
}

/** The span attributes of one attempt of `job`, a job of `w`'s queue. */
function jobSpanAttributes(w: { name: JobName }, job: JobWithMetadata<unknown>) {
  return {
    'messaging.system': 'pg-boss',
    'messaging.operation.type': 'process',
    'messaging.destination.name': w.name,
    'messaging.message.id': job.id,
    'job.queue': w.name,
    'job.attempt': job.retryCount + 1,
  };
}

/** A fetch this many `lingerMs` after the loop's previous one (that got jobs) ends a quiet spell. */
const QUIET_SPELL_LINGERS = 4;

/**
 * How long a fetch loop waits after a batch that was not full (`WorkOptions.lingerMs`): until the
 * jobs that keep coming at the rate they have lately (`perMs`, jobs per millisecond) fill a batch,
 * counted from this batch's fetch, and at most `lingerMs`. Jobs every few milliseconds fill a batch
 * soon, and wait little; a trickle gets the whole wait. The first batch after a quiet spell (its
 * fetch `sincePreviousFetchMs` after the one before, more than QUIET_SPELL_LINGERS waits) does not
 * wait: no recent rate says whether a trickle or a burst has begun, and the loop fetches again at
 * once (`JobQueue.start`), which measures it; a burst would otherwise pile up behind a whole wait
 * (bench/README.md, finding 71).
 */
export function lingerFor(w: { lingerMs: number; batchSize: number; perMs: number; sinceFetchMs: number; sincePreviousFetchMs: number }): number {
  if (w.sincePreviousFetchMs > QUIET_SPELL_LINGERS * w.lingerMs) return 0;
  const untilFull = w.batchSize / w.perMs - w.sinceFetchMs;
  return Math.min(w.lingerMs, Math.max(0, untilFull));
}

/** Runs `fn` over `items`, at most `limit` at a time. */
async function eachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const runner = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, runner));
}

/** The error message pg-boss kept as a failed job's output, whichever way the job failed. */
export function jobFailureMessage(output: unknown): string | undefined {
  if (typeof output === 'string') return output;
  if (output !== null && typeof output === 'object') {
    const o = output as { message?: unknown; value?: unknown };
    if (typeof o.message === 'string') return o.message;
    if (o.value !== undefined) return jobFailureMessage(o.value);
  }
  return undefined;
}

/** What a dead-letter job says of the job it stands for, for the log line of its handler. */
export function givenUpJob(job: JobWithMetadata<unknown>): { jobId: string | null; attempts: number; cause: string | undefined } {
  return { jobId: job.sourceId, attempts: (job.sourceRetryCount ?? 0) + 1, cause: jobFailureMessage(job.sourceOutput) };
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
  private readonly definitions = new Map<JobName, QueueDefinition>();
  private readonly workers: Worker[] = [];
  private readonly schedules: { name: JobName; cron: string }[] = [];
  /** how a job is inserted, per queue (known once the queues are synced at start) */
  private readonly inserts = new Map<JobName, JobInsert>();
  private started = false;
  /** the next sweep for jobs come due (`sweepDue`) */
  private sweep: NodeJS.Timeout | undefined;
  /** aborted when the queue stops: ends the fetch loops' lingering (`WorkOptions.lingerMs`) */
  private readonly stopping = new AbortController();
  private readonly config: Config;
  private readonly log: FastifyBaseLogger;
  private readonly handle: DatabaseHandle;

  constructor(handle: DatabaseHandle, config: Config, log: FastifyBaseLogger) {
    this.handle = handle;
    this.config = config;
    this.log = log;
    const runsWorkers = config.role !== 'api';
    const common = {
      schema: BOSS_SCHEMA,
      // Only a process that fetches jobs listens. An API process only sends them (the NOTIFY that
      // wakes the workers is part of the send): a LISTEN connection there would wake its backend
      // and the process for every job sent by any process, for nothing.
      useListenNotify: runsWorkers,
      supervise: runsWorkers,
      schedule: runsWorkers,
      migrate: true,
      monitorIntervalSeconds: 60,
    };
    this.boss = handle.pglite
      ? new PgBoss({ ...common, db: fromPglite(handle.pglite), backend: 'pglite' })
      : // Its own pool prepares its job fetches and nothing else (src/db/prepared.ts says why);
        // pg-boss hands its options to pg.Pool, which takes the client class from them.
        new PgBoss({
          ...common,
          connectionString: handle.connectionString,
          max: config.jobQueuePoolSize,
          ...(config.databasePreparedStatements ? { Client: JobFetchPreparingClient } : {}),
        });
    this.boss.on('error', (err: Error) => this.log.error({ err }, 'job queue error'));
  }

  define(def: QueueDefinition): void {
    this.definitions.set(def.name, def);
  }

  /** Registers a handler; it runs only in processes whose role includes the worker. */
  work<N extends JobName>(name: N, handler: JobHandler<N>, concurrency = 1, opts: BatchWorkOptions<N> = {}): void {
    if (!this.definitions.has(name)) throw new Error(`queue ${name} is not defined`);
    const batchSize = this.definitions.get(name)?.batchSize ?? DEFAULT_BATCH_SIZE;
    if (opts.perGroup !== undefined && (batchSize !== 1 || opts.perGroup > concurrency)) {
      throw new Error(`queue ${name}: a per-group limit needs batchSize 1 and at most ${concurrency} (its concurrency)`);
    }
    if ((opts.lingerMs ?? 0) > 0 && batchSize === 1) throw new Error(`queue ${name}: lingering needs batches (batchSize above 1)`);
    if (opts.batch !== undefined && batchSize === 1) throw new Error(`queue ${name}: running jobs together needs batches (batchSize above 1)`);
    this.workers.push({
      name,
      batchSize,
      handler: handler as Worker['handler'],
      concurrency,
      perGroup: opts.perGroup,
      load: opts.load,
      lingerMs: opts.lingerMs ?? 0,
      fetchedAt: undefined,
      perMs: 0,
      batch: opts.batch as Worker['batch'],
      loop: undefined,
    });
  }

  /**
   * Jobs of the defined queue `name` that pg-boss gives up on go to its dead-letter queue
   * (`deadLetterQueueOf(name)`, with DEAD_LETTER_RETRY), where `handler` records the outcome.
   */
  workGivenUp<N extends DeadLettered>(name: N, handler: JobHandler<N>): void {
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

  async start(): Promise<void> {
    await this.boss.start();
    await ensureJobIndexes(this.handle, this.log);
    await this.syncQueues();
    this.started = true;
    if (this.config.role === 'api') return;
    await Promise.all(this.workers.map((w) => w.load?.()));
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
        ...(w.perGroup !== undefined ? { localGroupConcurrency: w.perGroup } : {}),
        pollingIntervalSeconds: this.config.jobPollingSeconds,
        // NOTIFY wakes workers for new jobs, and the process's sweep (sweepDue) for retries and
        // delayed jobs once they come due: this poll of each loop is only the backstop of both
        notifyPollingIntervalSeconds: BACKSTOP_POLL_SECONDS,
      } as const;
      w.loop = await this.boss.work<unknown, unknown, typeof options>(w.name, options, async (jobs) => {
        const fetchedAt = performance.now();
        // the rate jobs come in at: half this fetch's (its jobs over the time since the previous
        // fetch), half the earlier ones', so one short interval (the fetch right after a full batch)
        // does not set it alone
        const sincePreviousFetchMs = w.fetchedAt === undefined ? Infinity : Math.max(1, fetchedAt - w.fetchedAt);
        w.perMs = (w.perMs + jobs.length / sincePreviousFetchMs) / 2;
        w.fetchedAt = fetchedAt;
        // Each job settles on its own: a failed one is failed (and so retried) here, by id, without
        // failing its batch-mates; pg-boss then completes the batch's jobs that are still active.
        // Not `perJobResults`: pg-boss 12.35 settles those through a join with a JSON recordset that
        // the planner cannot size, and it scans every retained job of the queue (linear in history).
        const rest = w.batch !== undefined && jobs.length > 1 ? await this.runTogether(w, w.batch, jobs) : jobs;
        await eachLimited(rest, oneByOne ? 1 : w.concurrency, (job) => this.run(w, job));
        // a full batch fetches again at once (burstWhenBatchFull): a backlog is batched already
        if (jobs.length < options.batchSize) {
          if (w.lingerMs > 0) {
            const ms = lingerFor({ lingerMs: w.lingerMs, batchSize: options.batchSize, perMs: w.perMs, sinceFetchMs: performance.now() - fetchedAt, sincePreviousFetchMs });
            if (ms > 0) await this.linger(ms);
          }
          // After a batch that was not full, pg-boss's loop fetches again only on a NOTIFY, and a
          // job sent while an earlier one was ready sends none (`linkedJobCtes`): one that committed
          // just after this batch's fetch took its predecessor would wait for its NOTIFY's bound or
          // the sweep, and every job sent behind it with it. The loop fetches once more instead;
          // only an empty fetch waits for a NOTIFY.
          if (w.loop !== undefined) this.boss.notifyWorker(w.loop);
        }
      });
    }
    for (const s of this.schedules) await this.boss.schedule(s.name, s.cron);
    this.sweepDue([...new Set(this.workers.map((w) => w.name))]);
  }

  /**
   * Every `dueSweepSeconds`, one statement finds which of `names` hold a job that has come due (a
   * retry after its backoff, a delayed send) and sends their NOTIFY, which wakes every fetch loop of
   * those queues, as a new job's does. Without it each loop would poll its queue on its own: about
   * fifteen statements a second from an idle worker process, eight of them for the outgoing
   * deliveries' loops. The NOTIFY reaches the other worker processes too; any of them may take the
   * job.
   */
  private sweepDue(names: string[]): void {
    const text = `SELECT pg_notify(${notifyChannelSql(BOSS_SCHEMA)}, q) FROM unnest($1::text[]) AS q
      WHERE EXISTS (SELECT 1 FROM ${BOSS_SCHEMA}.job j WHERE j.name = q AND ${readyToFetch('j')})`;
    const next = () => {
      this.sweep = setTimeout(() => {
        this.boss
          .getDb()
          .executeSql(text, [names])
          .catch((err: unknown) => {
            // a sweep still running when the queue stops fails with pg-boss's pool: not worth a warning
            if (this.started) this.log.warn({ err }, 'job queue: the sweep for jobs come due failed');
          })
          .finally(() => {
            if (this.started) next();
          });
      }, dueSweepSeconds(this.config) * 1000);
      this.sweep.unref();
    };
    next();
  }

  /** Waits `ms`, or until the queue stops (`stop` cuts every wait short). */
  private async linger(ms: number): Promise<void> {
    await sleep(ms, undefined, { signal: this.stopping.signal }).catch(() => {});
  }

  /**
   * A batch's jobs run together (`BatchWorkOptions.batch`); returns the jobs it did not complete. Each
   * completed job gets its span (a child of the span that sent it, when tracing is on) covering the
   * batch's run.
   */
  private async runTogether(w: Worker, batch: NonNullable<Worker['batch']>, jobs: JobWithMetadata<unknown>[]): Promise<JobWithMetadata<unknown>[]> {
    const startTime = Date.now();
    let done: ReadonlySet<string>;
    try {
      done = await batch(jobs);
    } catch (err) {
      // a lock not granted in time, or a deadlock, is how a batch runner that sets a lock timeout
      // gives way to the changes of single jobs (the orders' does): expected under contention
      const code = (err as { code?: unknown } | null)?.code;
      const gaveWay = code === '55P03' || code === '40P01';
      this.log[gaveWay ? 'info' : 'warn']({ err, queue: w.name, jobs: jobs.length }, 'job batch not run together; its jobs run one by one');
      return jobs;
    }
    for (const job of jobs) {
      if (!done.has(job.id)) continue;
      const attributes = { ...jobSpanAttributes(w, job), 'job.batch.size': jobs.length };
      tracer.startSpan(`process ${w.name}`, { kind: SpanKind.CONSUMER, attributes, startTime }, traceContextOf(job.data)).end();
    }
    return done.size === 0 ? jobs : jobs.filter((job) => !done.has(job.id));
  }

  /**
   * One attempt of one job, in a span of its own (a child of the span that sent the job, when tracing
   * is on); a failed attempt is failed by id, so pg-boss retries it.
   */
  private async run(w: Worker, job: JobWithMetadata<unknown>): Promise<void> {
    const attempt = job.retryCount + 1;
    await tracer.startActiveSpan(`process ${w.name}`, { kind: SpanKind.CONSUMER, attributes: jobSpanAttributes(w, job) }, traceContextOf(job.data), async (span) => {
      try {
        await w.handler(job);
      } catch (err) {
        span.recordException(err instanceof Error ? err : String(err));
        span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
        this.log.warn({ err, queue: w.name, jobId: job.id, attempt }, 'job attempt failed');
        await this.boss.fail(w.name, job.id, { message: err instanceof Error ? err.message : String(err) });
      } finally {
        span.end();
      }
    });
  }

  /**
   * Creates the defined queues, or brings the settings of queues that already exist (created by an
   * earlier version: pg-boss's `createQueue` leaves an existing queue as it is) in line with their
   * definitions. Dead-letter queues first: a queue can only name an existing one.
   */
  private async syncQueues(): Promise<void> {
    const defs = [...this.definitions.values()].sort((a, b) => Number(a.deadLetter !== undefined) - Number(b.deadLetter !== undefined));
    for (const def of defs) {
      if (def.deadLetter !== undefined && !this.definitions.has(def.deadLetter)) throw new Error(`queue ${def.deadLetter} is not defined`);
    }
    const existing = new Map((await this.boss.getQueues(defs.map((d) => d.name))).map((q) => [q.name, q as unknown as Record<string, unknown>]));
    const touched: string[] = [];
    for (const def of defs) {
      const { name } = def;
      const options = queueSettings(def);
      const current = existing.get(name);
      if (!current) {
        await this.boss.createQueue(name, options);
        touched.push(name);
        continue;
      }
      const changed = Object.entries(options)
        .filter(([key, value]) => current[key] !== value)
        .map(([key]) => key);
      if (changed.length === 0) continue;
      await this.boss.updateQueue(name, options);
      touched.push(name);
      this.log.info({ queue: name, changed }, 'job queue settings updated');
      if (def.deadLetter !== undefined && current.deadLetter !== def.deadLetter) await this.attachDeadLetter(name, def.deadLetter);
    }
    // Creating or updating a queue drops it from pg-boss's queue cache, and a send that misses the
    // cache looks the queue up on pg-boss's own connection, outside the sender's transaction. On
    // PGlite (one session) that lookup waits for the transaction, which waits for the send: the
    // first order after start-up could hang until a worker's first fetch refilled the cache. Any
    // call by queue name refills it; this one reads one row by primary key. (pg-boss's start filled
    // the cache with every queue that already existed.)
    for (const name of touched) await this.boss.getJobById(name, '00000000-0000-0000-0000-000000000000');
    const queues = touched.length === 0 ? existing.values() : await this.boss.getQueues(defs.map((d) => d.name));
    for (const q of queues as Iterable<Record<string, unknown>>) {
      const queue = { name: String(q.name), table: String(q.table), notify: q.notify === true };
      this.inserts.set(queue.name as JobName, jobInsertOf(BOSS_SCHEMA, queue));
    }
  }

  /**
   * A job takes its queue's dead letter when it is sent and keeps it through its retries, so the jobs
   * already queued or running when a queue gets its dead letter (a database of an earlier version)
   * are given it here; without it, one of them given up on would leave its record unfinished.
   */
  private async attachDeadLetter(name: JobName, deadLetter: JobName): Promise<void> {
    const sql = `UPDATE ${BOSS_SCHEMA}.job SET dead_letter = $2 WHERE name = $1 AND state < 'completed' AND dead_letter IS DISTINCT FROM $2`;
    await this.boss.getDb().executeSql(sql, [name, deadLetter]);
  }

  /**
   * Enqueues inside `trx` (the job exists only if the transaction commits); returns the job's id.
   * A job about an order, a platform webhook or an outgoing message is linked to it in `trx` too.
   */
  async send<N extends JobName>(trx: Transaction<Database>, name: N, data: JobPayloads[N], options: SendOptions = {}): Promise<string | null> {
    const id = await this.boss.send(name, withTraceContext(data), { ...options, db: fromKysely(trx) });
    const subject = jobSubjectOf(data);
    if (id !== null && subject) await insertJobLink(trx, id, name, subject);
    return id;
  }

  /**
   * A job of `name` about a subject that does not exist yet, sent by the statement that creates the
   * subject (`ctes`, in the caller's transaction, or alone): the job as pg-boss's send creates it, its link and
   * the NOTIFY that wakes the workers cost no statement of their own. Its data is `{ [kind]: the
   * subject's id }`, with the trace context when tracing is on.
   */
  linkedJob<N extends JobName>(name: N, kind: keyof JobSubject): LinkedJob<N> {
    const insert = this.inserts.get(name);
    if (!insert) throw new Error(`queue ${name} is not started`);
    const id = randomUUID();
    const part: LinkedJob<N>['part'] = {
      key: `${insert.key} ${kind}`,
      args: { jobId: id, extra: JSON.stringify(withTraceContext({})) },
      build: (a, subjects) => linkedJobCtes(insert, { jobId: a.jobId, kind, subjects, extra: a.extra }),
    };
    return { name, id, part, ctes: (subjects) => linkedJobCtes(insert, { jobId: id, kind, subjects, extra: part.args.extra }) };
  }

  /** Enqueues outside any transaction (for jobs that follow a committed change). */
  async sendNow<N extends JobName>(name: N, data: JobPayloads[N], options: SendOptions = {}): Promise<string | null> {
    const id = await this.boss.send(name, withTraceContext(data), options);
    const subject = jobSubjectOf(data);
    if (id !== null && subject) await insertJobLink(this.handle.db, id, name, subject);
    return id;
  }

  /** Started, and pg-boss's own connections reach its tables (on PostgreSQL they are a separate pool). */
  async ping(): Promise<void> {
    if (!this.started) throw new Error('job queue not started');
    await this.boss.getDb().executeSql(`SELECT 1 FROM ${BOSS_SCHEMA}.version LIMIT 1`, []);
  }

  /**
   * Stops fetching, lets running jobs finish (up to the timeout), then fails the ones still running
   * so they are retried at once elsewhere, and closes. The timeout stays below the 30 s grace period
   * of server.ts, so this happens before the process is forced to exit.
   */
  async stop(timeoutMs = 20000): Promise<void> {
    if (!this.started) return;
    this.started = false;
    clearTimeout(this.sweep);
    this.stopping.abort();
    await this.boss.stop({ graceful: true, timeout: timeoutMs, close: true });
  }
}
