import type { FastifyBaseLogger } from 'fastify';
import type { JobWithMetadata } from 'pg-boss';
import { jobFailureMessage } from './job-records.ts';

/** What pg-boss's supervision writes into the jobs it fails because their heartbeat lapsed. */
const HEARTBEAT_TIMEOUT = 'job heartbeat timeout';

/** How long fetched jobs are gathered before their line is written: one line per queue for a dead worker's jobs. */
const GATHER_MS = 1000;

const failedByHeartbeat = (job: JobWithMetadata<unknown>) => job.retryCount > 0 && jobFailureMessage(job.output) === HEARTBEAT_TIMEOUT;

/**
 * Logs the jobs pg-boss's supervision failed back, silently, because their worker stopped
 * heartbeating (it died or stalled): a live worker that fetches one again sees pg-boss's heartbeat
 * timeout as its last output. One queue's jobs fetched within a second make one line.
 */
export class LapsedHeartbeats {
  private readonly log: FastifyBaseLogger;
  private readonly gathered = new Map<string, JobWithMetadata<unknown>[]>();
  private timer: NodeJS.Timeout | undefined;

  constructor(log: FastifyBaseLogger) {
    this.log = log;
  }

  /** Notes the fetched `jobs` of `queue` that the heartbeat failed back. */
  note(queue: string, jobs: readonly JobWithMetadata<unknown>[]): void {
    const lapsed = jobs.filter(failedByHeartbeat);
    if (lapsed.length === 0) return;
    this.gathered.set(queue, [...(this.gathered.get(queue) ?? []), ...lapsed]);
    this.timer ??= setTimeout(() => this.flush(), GATHER_MS).unref();
  }

  /** Writes the gathered lines now (also at shutdown). */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const [queue, jobs] of this.gathered) {
      this.log.warn(
        { queue, count: jobs.length, jobIds: jobs.map((j) => j.id) },
        `jobs failed back to the queue after their worker stopped heartbeating (it died or stalled): ${queue} ${jobs.length}; running again here (process ${process.pid})`,
      );
    }
    this.gathered.clear();
  }
}
