import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import { schedulePurge } from '../../jobs/retention.ts';
import { purgeSettledMessages } from './trace.repository.ts';

/** Hourly: messages settled more than WEBHOOK_MESSAGE_RETENTION_DAYS ago go, with their attempts. */
export function registerMessageRetentionJob(queue: JobQueue, deps: { db: Db; config: Config; log: FastifyBaseLogger }): void {
  schedulePurge(queue, deps.log, {
    name: 'webhook-messages-purge',
    cron: '47 * * * *',
    what: 'outgoing webhook messages',
    days: deps.config.webhookMessageRetentionDays,
    batch: (before, limit) => purgeSettledMessages(deps.db, before, limit),
  });
}
