/** Jobs a process left running when it died: taken up at start-up, or failed back by pg-boss's supervision. */
import type { FastifyBaseLogger } from 'fastify';
import type { JobWithMetadata, PgBoss } from 'pg-boss';
import { jobFailureMessage } from './registry.ts';

/** What pg-boss's supervision writes into the jobs it fails because their heartbeat lapsed. */
const HEARTBEAT_TIMEOUT = 'job heartbeat timeout';

const GATHER_MS = 1000;

/** Logs the jobs pg-boss's supervision silently failed as their worker stopped heartbeating, per queue, kind and second: failed back (a retry's output) or given up (a dead-letter copy's sourceOutput). */
export class LapsedHeartbeats {
  private readonly log: FastifyBaseLogger;
  private readonly gathered = new Map<string, { queue: string; givenUp: boolean; jobs: JobWithMetadata<unknown>[] }>();
  private timer: NodeJS.Timeout | undefined;

  constructor(log: FastifyBaseLogger) {
    this.log = log;
  }

  note(queue: string, jobs: readonly JobWithMetadata<unknown>[]): void {
    for (const job of jobs) {
      const givenUp = job.retryCount === 0;
      if (jobFailureMessage(givenUp ? job.sourceOutput : job.output) !== HEARTBEAT_TIMEOUT) continue;
      const key = `${givenUp} ${queue}`;
      this.gathered.set(key, { queue, givenUp, jobs: [...(this.gathered.get(key)?.jobs ?? []), job] });
      this.timer ??= setTimeout(() => this.flush(), GATHER_MS).unref();
    }
  }

  /** Also at shutdown. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const { queue, givenUp, jobs } of this.gathered.values()) {
      const [what, then] = givenUp ? ['given up with no retry left', 'their given-up handling runs'] : ['failed back to the queue', 'running again'];
      this.log.warn(
        { queue, count: jobs.length, jobIds: jobs.map((j) => (givenUp ? j.sourceId : j.id)) },
        `jobs ${what} after their worker stopped heartbeating (it died or stalled): ${queue} ${jobs.length}; ${then} here (process ${process.pid})`,
      );
    }
    this.gathered.clear();
  }
}

/**
 * At start-up on the embedded database (its one process died with any running job), fails every running job, per queue;
 * pg-boss's own (`__pgboss__send-it`) too, so a cron occurrence is forwarded at once, uncounted: a clean stop can leave one.
 */
export async function takeUpLeftJobs(boss: PgBoss): Promise<Record<string, number>> {
  const takenUp: Record<string, number> = {};
  for (const { name } of await boss.getQueues()) {
    const ids = (await boss.findJobs(name)).filter((job) => job.state === 'active').map((job) => job.id);
    if (ids.length === 0) continue;
    await boss.fail(name, ids, { message: 'the process running it ended before it finished' });
    if (!name.startsWith('__pgboss__')) takenUp[name] = ids.length;
  }
  return takenUp;
}
