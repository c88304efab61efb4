import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/database.ts';
import { HOUSEKEEPING_RETRY, type JobQueue } from '../../jobs/queue.ts';
import { purgeExpiredIdempotencyKeys } from './idempotency.repository.ts';
import type { OrderEventBus } from '../../events/order-events.ts';
import { PUBLISH_QUEUE, publishEvents } from './order-lifecycle.ts';
import type { OrderProcessor } from './order-processor.ts';

/**
 * The orders' processing (a fetched batch together) and its dead letter, the publishing of order
 * events (woken after each change's commit; a run every minute too, so events whose wake was lost do
 * not wait for the next change), and the hourly purge of expired Idempotency-Key responses.
 */
export function registerOrderJobs(
  queue: JobQueue,
  deps: { db: Db; log: FastifyBaseLogger; processor: OrderProcessor; orderEvents: OrderEventBus; concurrency: number },
): void {
  const { processor } = deps;
  // POST /orders sends one per order: its link costs the request nothing (src/jobs/job-policies.ts)
  queue.define({ name: 'order-process', linkWhenTaken: true });
  queue.work('order-process', (job) => processor.handle(job), deps.concurrency, { together: (jobs) => processor.handleBatch(jobs) });
  queue.workGivenUp('order-process', async (job) => {
    await processor.abandon(job);
  });

  // one job waiting and one running at most: a run publishes every event committed before it starts
  queue.define({ name: PUBLISH_QUEUE, policy: 'stately', batchSize: 1 });
  queue.work(PUBLISH_QUEUE, async () => {
    await publishEvents(deps.db, deps.orderEvents);
  });
  queue.scheduleCron(PUBLISH_QUEUE, '* * * * *');

  queue.define({ name: 'idempotency-keys-purge', ...HOUSEKEEPING_RETRY });
  queue.work('idempotency-keys-purge', async () => {
    const purged = await purgeExpiredIdempotencyKeys(deps.db);
    if (purged > 0) deps.log.info({ purged }, 'purged expired idempotency keys');
  });
  queue.scheduleCron('idempotency-keys-purge', '23 * * * *');
}
