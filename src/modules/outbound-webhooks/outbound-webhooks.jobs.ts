import type { JobQueue } from '../../jobs/queue.ts';
import type { WebhookDeliveryService } from './delivery.service.ts';
import { DELIVERY_TIMEOUT_MS } from './sender.ts';

/** Deliveries wait on the network; more of them run at once than CPU-bound jobs. */
const DELIVERY_CONCURRENCY = 8;

/**
 * One job per delivery attempt, fetched one at a time so a slow receiver holds nothing behind it; at
 * most `maxPerHost` of one destination run at once in this process.
 */
export function registerOutboundWebhookJobs(
  queue: JobQueue,
  deps: { delivery: WebhookDeliveryService; sendDisabledNotice: (subscriptionId: number) => Promise<void>; maxPerHost: number },
): void {
  queue.define({ name: 'webhook-deliver', expireInSeconds: Math.ceil(DELIVERY_TIMEOUT_MS / 1000) * 4, batchSize: 1 });
  queue.work('webhook-deliver', (job) => deps.delivery.deliver(job.data), Math.max(DELIVERY_CONCURRENCY, deps.maxPerHost), {
    perGroup: deps.maxPerHost,
    // each retry of a message is a job of its own: the span reports the message's attempt
    attempt: (job) => job.data.attempt,
  });
  queue.define({ name: 'webhook-disabled-email' });
  queue.work('webhook-disabled-email', (job) => deps.sendDisabledNotice(job.data.subscriptionId));
}
