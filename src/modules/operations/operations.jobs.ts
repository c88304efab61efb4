import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import { purgeJobLinks } from '../../jobs/jobs.repository.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import { schedulePurge } from '../../jobs/retention.ts';

/** A never-started job lives its queue's retention (14 days) past JOB_RETENTION_DAYS; its link as long. */
const LINK_GRACE_DAYS = 14;

/** Hourly: the links of jobs pg-boss has deleted. */
export function registerJobRetentionJob(queue: JobQueue, deps: { db: Db; config: Config; log: FastifyBaseLogger }): void {
  const days = deps.config.jobRetentionDays;
  schedulePurge(queue, deps.log, {
    name: 'jobs-purge',
    cron: '57 * * * *',
    what: 'job links',
    days: days === 0 ? 0 : days + LINK_GRACE_DAYS,
    batch: (before, limit) => purgeJobLinks(deps.db, before, limit),
  });
}
