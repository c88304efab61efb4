import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import { deadLetterQueueOf, isLastAttempt, type JobQueue } from '../../jobs/queue.ts';
import { findOrderForReport } from './inbound.repository.ts';
import { INBOUND_PROCESS_QUEUE, type InboundProcessJob, type InboundWebhookService } from './inbound.service.ts';
import { reportFulfilment } from './platform-client.ts';
import { SHOPIFY_SOURCE } from './shopify-order.ts';
import { WEBHOOK_DELIVER_QUEUE, type DeliverJob, type WebhookDeliveryService } from './webhook-delivery.service.ts';
import { DELIVERY_TIMEOUT_MS } from './webhook-sender.ts';

export const PLATFORM_REPORT_QUEUE = 'webhook-platform-report';
/** Receives each inbound processing job pg-boss gave up on: its handler records the event `failed`. */
export const INBOUND_PROCESS_DEAD_LETTER_QUEUE = deadLetterQueueOf(INBOUND_PROCESS_QUEUE);
/** Deliveries wait on the network; more of them run at once than CPU-bound jobs. */
const DELIVERY_CONCURRENCY = 8;

export interface PlatformReportJob {
  orderId: number;
}

export function registerWebhookJobs(
  queue: JobQueue,
  deps: { db: Db; config: Config; log: FastifyBaseLogger; inbound: InboundWebhookService; delivery: WebhookDeliveryService },
): void {
  // the spec's internal retry policy (3 attempts, exponential backoff) applies to these two
  queue.define({ name: INBOUND_PROCESS_QUEUE });
  queue.work<InboundProcessJob>(INBOUND_PROCESS_QUEUE, (job) => deps.inbound.process(job.data.inboundWebhookId, isLastAttempt(job)), 2);
  queue.workGivenUp<InboundProcessJob>(INBOUND_PROCESS_QUEUE, async (job) => {
    await deps.inbound.abandon(job);
  });

  queue.define({ name: PLATFORM_REPORT_QUEUE });
  queue.work<PlatformReportJob>(PLATFORM_REPORT_QUEUE, async (job) => {
    const baseUrl = deps.config.platformApiUrl;
    if (!baseUrl) return; // configuration removed since the job was queued
    const order = await findOrderForReport(deps.db, job.data.orderId);
    if (!order || order.source !== SHOPIFY_SOURCE || !order.external_id) return;
    if (order.status !== 'completed' && order.status !== 'failed') return;
    try {
      await reportFulfilment(
        { baseUrl, token: deps.config.platformApiToken, timeoutMs: DELIVERY_TIMEOUT_MS },
        { externalId: order.external_id, orderId: order.id, status: order.status, failureReason: order.failure_reason, lines: order.lines },
      );
    } catch (err) {
      const level = isLastAttempt(job) ? 'error' : 'warn';
      deps.log[level]({ err, orderId: order.id, attempt: job.retryCount + 1 }, 'platform fulfilment report failed');
      throw err;
    }
  });

  // Outgoing deliveries schedule their own retries (webhookRetrySchedule); pg-boss's retries here
  // only cover a crash or a database error around an attempt.
  queue.define({ name: WEBHOOK_DELIVER_QUEUE, expireInSeconds: Math.ceil(DELIVERY_TIMEOUT_MS / 1000) * 4, batchSize: 1 });
  queue.work<DeliverJob>(WEBHOOK_DELIVER_QUEUE, (job) => deps.delivery.deliver(job.data), DELIVERY_CONCURRENCY);
}
