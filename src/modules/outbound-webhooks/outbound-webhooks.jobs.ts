import type { JobQueue } from '../../jobs/queue.ts';
import type { WebhookDeliveryService } from './delivery.service.ts';
import type { DisabledNotices } from './disabled-notices.ts';
import { DELIVERY_TIMEOUT_MS } from './sender.ts';

/** Deliveries wait on the network; more of them run at once than CPU-bound jobs. */
const DELIVERY_CONCURRENCY = 8;

/**
 * One job per delivery attempt. Its expiry bounds a hung attempt at four times the delivery timeout,
 * and each loop fetches one job so one slow receiver holds no other delivery behind it. Jobs are
 * grouped by destination host: at most `maxPerHost` of one host run at once in this process, and
 * the others stay queued while other hosts' deliveries go on.
 */
export function registerOutboundWebhookJobs(
  queue: JobQueue,
  deps: { delivery: WebhookDeliveryService; notices: DisabledNotices; maxPerHost: number },
): void {
  queue.define({ name: 'webhook-deliver', expireInSeconds: Math.ceil(DELIVERY_TIMEOUT_MS / 1000) * 4, batchSize: 1 });
  queue.work('webhook-deliver', (job) => deps.delivery.deliver(job.data), Math.max(DELIVERY_CONCURRENCY, deps.maxPerHost), {
    perGroup: deps.maxPerHost,
    // each retry of a message is a job of its own: the span reports the message's attempt
    attempt: (job) => job.data.attempt,
  });
  queue.define({ name: 'webhook-disabled-email' });
  queue.work('webhook-disabled-email', (job) => deps.notices.send(job.data.subscriptionId));
}
