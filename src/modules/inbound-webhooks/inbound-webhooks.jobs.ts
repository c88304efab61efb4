import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import { isLastAttempt, type JobQueue } from '../../jobs/queue.ts';
import { schedulePurge } from '../../jobs/retention.ts';
import type { OrdersService } from '../orders/orders.service.ts';
import { findSkus } from '../products/products.repository.ts';
import { purgeProcessedPayloads } from './inbound-webhooks.repository.ts';
import type { InboundWebhookService } from './inbound-webhooks.service.ts';
import { reportFulfilment } from './platform-client.ts';
import { SHOPIFY_SOURCE, loadPayloadChecker } from './shopify-order.ts';

const PLATFORM_TIMEOUT_MS = 15000;

/** Processing of stored platform webhooks, its dead-letter queue, and the report of an order's outcome. */
export function registerInboundWebhookJobs(
  queue: JobQueue,
  deps: { db: Db; config: Config; log: FastifyBaseLogger; inbound: InboundWebhookService; orders: OrdersService },
): void {
  queue.define({ name: 'webhook-inbound-process' });
  queue.work('webhook-inbound-process', (job) => deps.inbound.process(job.data.inboundWebhookId, isLastAttempt(job)), 2, { load: loadPayloadChecker });
  queue.workGivenUp('webhook-inbound-process', async (job) => {
    await deps.inbound.abandon(job);
  });

  queue.define({ name: 'webhook-platform-report' });
  queue.work('webhook-platform-report', async (job) => {
    const baseUrl = deps.config.platformApiUrl;
    if (!baseUrl) return; // configuration removed since the job was queued
    const found = await deps.orders.find(job.data.orderId);
    if (!found) return;
    const { order, lines } = found;
    if (order.source !== SHOPIFY_SOURCE || !order.external_id) return;
    if (order.status !== 'completed' && order.status !== 'failed') return;
    const skus = await findSkus(deps.db, [...new Set(lines.map((l) => l.product_id))]);
    try {
      await reportFulfilment(
        { baseUrl, token: deps.config.platformApiToken, timeoutMs: PLATFORM_TIMEOUT_MS },
        {
          externalId: order.external_id,
          orderId: order.id,
          status: order.status,
          failureReason: order.failure_reason,
          lines: lines.map((l) => ({ sku: skus.get(l.product_id) ?? '', quantity: l.quantity })),
        },
      );
    } catch (err) {
      const level = isLastAttempt(job) ? 'error' : 'warn';
      deps.log[level]({ err, orderId: order.id, attempt: job.retryCount + 1 }, 'platform fulfilment report failed');
      throw err;
    }
  });
}

/** Hourly: the payloads of webhooks processed over INBOUND_PAYLOAD_RETENTION_DAYS ago go; failed ones keep theirs. */
export function registerInboundRetentionJob(queue: JobQueue, deps: { db: Db; config: Config; log: FastifyBaseLogger }): void {
  schedulePurge(queue, deps.log, {
    name: 'inbound-payloads-purge',
    cron: '37 * * * *',
    what: 'inbound webhook payloads',
    days: deps.config.inboundPayloadRetentionDays,
    batch: (before, limit) => purgeProcessedPayloads(deps.db, before, limit),
  });
}
