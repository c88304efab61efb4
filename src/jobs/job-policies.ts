import type { FastifyBaseLogger } from 'fastify';
import type { PgBoss } from 'pg-boss';
import type { JobName } from './registry.ts';

/** Internal jobs: the spec's "at most 3 attempts", with exponential backoff between them. */
export const INTERNAL_RETRY = { retryLimit: 2, retryDelay: 1, retryBackoff: true } as const;

/**
 * Scheduled housekeeping (the retention purges): a run that failed (the database away) is as good a
 * minute later, then two.
 */
export const HOUSEKEEPING_RETRY = { retryDelay: 60 } as const;

/**
 * How a job whose worker died (SIGKILL, OOM, lost host) gets back to another worker. A running
 * handler refreshes its heartbeat every `heartbeatSeconds / 2`; a job without a fresh heartbeat is
 * failed (and retried) by the next supervision pass of any worker, while a live but slow handler
 * keeps its job. 10 s is the shortest heartbeat pg-boss accepts. `expireInSeconds` still bounds a
 * handler that hangs while its process lives. Figures: docs/decisions/005-crash-recovery.md.
 */
export const JOB_LIVENESS = { heartbeatSeconds: 10, expireInSeconds: 300 } as const;

/**
 * How often a running handler's heartbeat is refreshed (pg-boss's default: half the heartbeat). 3 s
 * lets a live handler's process stall up to 7 s (a busy host, a long embedded query) before a
 * supervision pass takes its job; a dead worker's jobs lapse after 10 s whatever this is.
 */
export const HEARTBEAT_REFRESH_SECONDS = 3;

/**
 * Seconds between two supervision passes of a process that runs jobs: each pass fails the jobs
 * whose heartbeat lapsed (on PostgreSQL, a dead worker's jobs are back in the queue within
 * heartbeat + this) and counts every queue's jobs (the metrics, the backlog that keeps a
 * one-at-a-time loop fetching). The embedded database has one process, which takes up a dead one's
 * jobs at start-up: its passes only count, and cost its single connection, so they are rarer.
 */
export function superviseSeconds(embedded: boolean): number {
  return embedded ? 5 : 2;
}

/**
 * Dead-letter queues record an outcome (a row marked failed) for a job its own queue gave up on, so
 * they keep trying longer than the jobs they stand in for: 9 attempts, the last about 20 to 40
 * minutes after the first, enough to outlast a database failover.
 */
export const DEAD_LETTER_RETRY = { retryLimit: 8, retryDelay: 5, retryBackoff: true } as const;

export interface QueueDefinition {
  name: JobName;
  /**
   * Jobs fetched at once (default: 4, and at least the worker's concurrency). 1: slow, I/O-bound
   * jobs (outgoing HTTP), each of the worker's loops fetching one job, so one slow job holds no
   * other behind it.
   */
  batchSize?: number;
  retryLimit?: number;
  retryDelay?: number;
  retryBackoff?: boolean;
  expireInSeconds?: number;
  heartbeatSeconds?: number;
  /**
   * A queue (defined too) that pg-boss copies a job of this one into when it gives up on it for
   * good: the last attempt threw, or it was failed by expiry, by a stale heartbeat (its worker
   * died) or by a shutdown that could not wait for it.
   */
  deadLetter?: JobName;
}

/**
 * A queue's settings as pg-boss keeps them: the service's defaults, then the definition's own.
 * Finished jobs are deleted by pg-boss after JOB_RETENTION_DAYS (0: kept).
 */
export function queueSettings(def: QueueDefinition, retentionDays: number) {
  const { name: _name, batchSize: _batchSize, ...own } = def;
  return { ...INTERNAL_RETRY, ...JOB_LIVENESS, deleteAfterSeconds: retentionDays * 86400, ...own, notify: true };
}

/** Queues of earlier versions: `order-counts-fold` folded the counter rows decision 011 removed. */
const RETIRED_QUEUES = ['order-counts-fold'];

/**
 * Creates the defined queues, or brings the settings of queues an earlier version created in line
 * with their definitions (pg-boss's `createQueue` leaves an existing queue as it is). Dead-letter
 * queues first: a queue can only name an existing one. A retired queue is deleted with its schedule,
 * so pg-boss stops sending jobs nobody works.
 */
export async function syncQueues(boss: PgBoss, definitions: readonly QueueDefinition[], retentionDays: number, log: FastifyBaseLogger): Promise<void> {
  const defs = [...definitions].sort((a, b) => Number(a.deadLetter !== undefined) - Number(b.deadLetter !== undefined));
  const existing = new Map((await boss.getQueues(defs.map((d) => d.name))).map((q) => [q.name, q as unknown as Record<string, unknown>]));
  const touched: string[] = [];
  for (const name of RETIRED_QUEUES) await boss.deleteQueue(name);
  for (const def of defs) {
    const options = queueSettings(def, retentionDays);
    const current = existing.get(def.name);
    if (!current) {
      await boss.createQueue(def.name, options);
      touched.push(def.name);
      continue;
    }
    const changed = Object.entries(options).filter(([key, value]) => current[key] !== value);
    if (changed.length === 0) continue;
    await boss.updateQueue(def.name, options);
    touched.push(def.name);
    log.info({ queue: def.name, changed: changed.map(([key]) => key) }, 'job queue settings updated');
  }
  // A send that misses pg-boss's queue cache looks the queue up on pg-boss's own connection,
  // outside the sender's transaction: on PGlite (one session) that waits for the transaction,
  // which waits for the send. Creating or updating a queue drops it from the cache; any call by
  // queue name fills it again.
  for (const name of touched) await boss.getJobById(name, '00000000-0000-0000-0000-000000000000');
}
