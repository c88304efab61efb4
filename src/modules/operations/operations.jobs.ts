import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import { purgeFinishedJobs, purgeOrphanJobLinks } from '../../jobs/jobs.repository.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import { retentionCutoff, schedulePurge } from '../../jobs/retention.ts';

/**
 * How long a link outlives the retention of finished jobs before it counts as an orphan: pg-boss
 * deletes a job that was never started after its queue's retention (14 days), without its link.
 */
const ORPHAN_LINK_GRACE_DAYS = 14;

/**
 * Hourly: jobs finished (completed, cancelled or failed) more than JOB_RETENTION_DAYS ago are
 * deleted with their links, in batches; the failed ones stay counted in `jobs_failed_total`.
 */
export function registerJobRetentionJob(queue: JobQueue, deps: { db: Db; config: Config; log: FastifyBaseLogger }): void {
  const days = deps.config.jobRetentionDays;
  schedulePurge(queue, deps.log, {
    name: 'jobs-purge',
    cron: '57 * * * *',
    what: 'finished jobs',
    days,
    // finished jobs first (with their links); once they are done, the orphaned links
    batch: async (before, limit) => {
      const jobs = await purgeFinishedJobs(deps.db, before, limit);
      if (jobs === limit) return jobs;
      return jobs + (await purgeOrphanJobLinks(deps.db, retentionCutoff(days + ORPHAN_LINK_GRACE_DAYS)!, limit));
    },
  });
}
