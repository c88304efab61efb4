import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/database.ts';
import { HOUSEKEEPING_RETRY, type JobQueue } from '../../jobs/queue.ts';
import { inBatches } from '../../jobs/retention.ts';
import { purgeExpiredIdempotencyKeys } from './idempotency.repository.ts';
import { FOLD_BATCH, foldUserOrderCounts } from './order-counts.repository.ts';
import type { OrderProcessor } from './order-processor.ts';

/** How long one scheduled fold may go on; what is left goes with the next run, a minute later. */
const FOLD_BUDGET_MS = 30_000;

/**
 * The order's background processing (the spec's internal retry policy: 3 attempts, exponential
 * backoff; the orders of a fetched batch processed together), its dead-letter queue, where a job
 * pg-boss gave up on fails the order with PROCESSING_ERROR, the hourly purge of expired
 * Idempotency-Key responses, and the fold of the users' order counter rows every minute.
 */
export function registerOrderJobs(queue: JobQueue, deps: { db: Db; log: FastifyBaseLogger; processor: OrderProcessor; concurrency: number }): void {
  const { processor } = deps;
  queue.define({ name: 'order-process' });
  queue.work('order-process', (job) => processor.handle(job), deps.concurrency, { together: (jobs) => processor.handleBatch(jobs) });
  queue.workGivenUp('order-process', async (job) => {
    await processor.abandon(job);
  });

  queue.define({ name: 'idempotency-keys-purge', ...HOUSEKEEPING_RETRY });
  queue.work('idempotency-keys-purge', async () => {
    const purged = await purgeExpiredIdempotencyKeys(deps.db);
    if (purged > 0) deps.log.info({ purged }, 'purged expired idempotency keys');
  });
  queue.scheduleCron('idempotency-keys-purge', '23 * * * *');

  queue.define({ name: 'order-counts-fold', ...HOUSEKEEPING_RETRY });
  queue.work('order-counts-fold', async () => {
    await inBatches((limit) => foldUserOrderCounts(deps.db, limit), { batchSize: FOLD_BATCH, budgetMs: FOLD_BUDGET_MS });
  });
  queue.scheduleCron('order-counts-fold', '* * * * *');
}
