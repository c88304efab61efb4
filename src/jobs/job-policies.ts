import type { FastifyBaseLogger } from 'fastify';
import type { PgBoss, QueueOptions } from 'pg-boss';
import type { JobName } from './registry.ts';

/** Internal jobs: the spec's "at most 3 attempts", with exponential backoff between them. */
export const INTERNAL_RETRY = { retryLimit: 2, retryDelay: 1, retryBackoff: true } as const;

/** Scheduled housekeeping (the retention purges): a run that failed is as good a minute later. */
export const HOUSEKEEPING_RETRY = { retryDelay: 60 } as const;

/** A job whose heartbeat (10 s, pg-boss's shortest) lapses is failed for a retry by the next supervision pass; `expireInSeconds` bounds a hung handler. */
export const JOB_LIVENESS = { heartbeatSeconds: 10, expireInSeconds: 300 } as const;

/** How often a running handler's heartbeat is refreshed: its process may stall up to 7 s before losing its job. */
export const HEARTBEAT_REFRESH_SECONDS = 3;

/** Dead-letter queues record a given-up job's outcome: 9 attempts over 20 to 40 minutes outlast a database failover. */
export const DEAD_LETTER_RETRY = { retryLimit: 8, retryDelay: 5, retryBackoff: true } as const;

export interface QueueDefinition extends Pick<QueueOptions, 'retryLimit' | 'retryDelay' | 'retryBackoff' | 'expireInSeconds' | 'heartbeatSeconds'> {
  name: JobName;
  /** Jobs fetched at once (default: 4, at least the concurrency); 1 for slow jobs, so none waits behind one. */
  batchSize?: number;
  /** A defined queue that pg-boss copies a job of this one into when it gives up on it. */
  deadLetter?: JobName;
  /** `stately`: at most one job waiting and one running (pg-boss drops a send while one waits), for a queue that only wakes a worker. */
  policy?: 'stately';
  /** Its jobs are linked to what they are about when first taken (one statement per batch), not when sent: for a hot request path. */
  linkWhenTaken?: true;
}

/** Queues of earlier versions: `order-counts-fold` folded the counter rows decision 011 removed. */
const RETIRED_QUEUES = ['order-counts-fold'];

/** Creates or updates the defined queues (`createQueue` leaves an existing one), dead-letter ones first (a queue names an existing one); deletes retired ones. */
export async function syncQueues(boss: PgBoss, definitions: readonly QueueDefinition[], retentionDays: number, log: FastifyBaseLogger): Promise<void> {
  const defs = [...definitions].sort((a, b) => Number(a.deadLetter !== undefined) - Number(b.deadLetter !== undefined));
  const existing = new Map((await boss.getQueues(defs.map((d) => d.name))).map((q) => [q.name, q as unknown as Record<string, unknown>]));
  const touched: string[] = [];
  for (const name of RETIRED_QUEUES) await boss.deleteQueue(name);
  for (const def of defs) {
    // the service's defaults, then the definition's own; finished jobs go after JOB_RETENTION_DAYS (0: kept)
    const { name: _name, batchSize: _batchSize, linkWhenTaken: _linkWhenTaken, ...own } = def;
    const options = { ...INTERNAL_RETRY, ...JOB_LIVENESS, deleteAfterSeconds: retentionDays * 86400, ...own, notify: true };
    const current = existing.get(def.name);
    // pg-boss cannot change a queue's policy: one whose definition names another is made anew
    if (current && current.policy !== (def.policy ?? 'standard')) {
      await boss.deleteQueue(def.name);
      log.info({ queue: def.name, policy: def.policy }, 'job queue made anew with its new policy');
    }
    if (!current || current.policy !== (def.policy ?? 'standard')) {
      await boss.createQueue(def.name, options);
      touched.push(def.name);
      continue;
    }
    const { policy: _policy, ...updatable } = options;
    const changed = Object.entries(updatable).filter(([key, value]) => current[key] !== value);
    if (changed.length === 0) continue;
    await boss.updateQueue(def.name, updatable);
    touched.push(def.name);
    log.info({ queue: def.name, changed: changed.map(([key]) => key) }, 'job queue settings updated');
  }
  // A send missing pg-boss's queue cache looks the queue up outside the sender's transaction: on PGlite (one session)
  // each waits for the other. Creating or updating a queue drops it from the cache; a call by queue name refills it.
  for (const name of touched) await boss.getJobById(name, '00000000-0000-0000-0000-000000000000');
}
