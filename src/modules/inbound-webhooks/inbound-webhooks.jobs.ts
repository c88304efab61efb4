import type { AppContext } from '../../app-context.ts';
import { isLastAttempt } from '../../jobs/queue.ts';
import { schedulePurge } from '../../jobs/retention.ts';
import type { OrdersService } from '../orders/orders.service.ts';
import { findSkusAndNames } from '../products/products.repository.ts';
import { purgeProcessedPayloads } from './inbound-webhooks.repository.ts';
import type { InboundWebhookService } from './inbound-webhooks.service.ts';
import { SHOPIFY_SOURCE, loadPayloadChecker } from './shopify-order.ts';

const PLATFORM_TIMEOUT_MS = 15000;

/** Processing of stored platform webhooks, its dead-letter queue, the report of an order's outcome, the payloads' purge. */
export function registerInboundWebhookJobs(ctx: AppContext, deps: { inbound: InboundWebhookService; orders: OrdersService }): void {
  const { queue, config, db, log } = ctx;
  queue.define({ name: 'webhook-inbound-process' });
  queue.work('webhook-inbound-process', (job) => deps.inbound.process(job.data.inboundWebhookId, isLastAttempt(job)), 2, { load: loadPayloadChecker });
  queue.workGivenUp('webhook-inbound-process', (job) => deps.inbound.abandon(job));

  // Tells the platform how its order ended (Shopify Admin API style). The URL is the operator's own,
  // so no SSRF guard; a non-2xx answer throws, and the job is retried.
  queue.define({ name: 'webhook-platform-report' });
  queue.work('webhook-platform-report', async (job) => {
    const baseUrl = config.platformApiUrl;
    if (!baseUrl) return; // configuration removed since the job was queued
    const found = await deps.orders.find(job.data.orderId);
    if (!found) return;
    const { order, lines } = found;
    const externalId = order.external_id;
    if (order.source !== SHOPIFY_SOURCE || !externalId) return;
    if (order.status !== 'completed' && order.status !== 'failed') return;
    const products = await findSkusAndNames(db, [...new Set(lines.map((l) => l.product_id))]);
    const fulfillment = {
      order_id: externalId,
      status: order.status === 'completed' ? 'success' : 'failure',
      ...(order.failure_reason ? { message: order.failure_reason } : {}),
      notify_customer: order.status === 'completed',
      line_items: lines.map((l) => ({ sku: products.get(l.product_id)?.sku ?? '', quantity: l.quantity })),
      service_order_id: order.id,
    };
    try {
      // loaded on the first report: an API process never sends one
      const { request } = await import('undici');
      const res = await request(`${baseUrl.replace(/\/+$/, '')}/orders/${encodeURIComponent(externalId)}/fulfillments`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          ...(config.platformApiToken ? { 'x-shopify-access-token': config.platformApiToken } : {}),
        },
        body: JSON.stringify({ fulfillment }),
        signal: AbortSignal.timeout(PLATFORM_TIMEOUT_MS),
      });
      await res.body.dump({ limit: 4096 });
      if (res.statusCode < 200 || res.statusCode >= 300) throw new Error(`platform API answered ${res.statusCode} for order ${externalId}`);
    } catch (err) {
      const level = isLastAttempt(job) ? 'error' : 'warn';
      log[level]({ err, orderId: order.id, attempt: job.retryCount + 1 }, 'platform fulfilment report failed');
      throw err;
    }
  });

  // hourly: the payloads of webhooks processed over INBOUND_PAYLOAD_RETENTION_DAYS ago go; failed ones keep theirs
  schedulePurge(queue, log, {
    name: 'inbound-payloads-purge',
    cron: '37 * * * *',
    what: 'inbound webhook payloads',
    days: config.inboundPayloadRetentionDays,
    batch: (before, limit) => purgeProcessedPayloads(db, before, limit),
  });
}
