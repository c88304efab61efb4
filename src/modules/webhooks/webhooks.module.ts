import type { AppContext, AppModule } from '../../app-context.ts';
import { SHOPIFY_SOURCE } from './shopify-order.ts';
import { orderSource } from './inbound.repository.ts';
import { registerInboundRoutes } from './inbound.routes.ts';
import { InboundWebhookService } from './inbound.service.ts';
import { createDeliveryAgent } from './ssrf.ts';
import { registerSubscriptionRoutes } from './subscriptions.routes.ts';
import { SubscriptionsService } from './subscriptions.service.ts';
import { WebhookDeliveryService } from './webhook-delivery.service.ts';
import { DELIVERY_TIMEOUT_MS } from './webhook-sender.ts';
import { PLATFORM_REPORT_QUEUE, registerWebhookJobs, type PlatformReportJob } from './webhooks.jobs.ts';

const inboundServices = new WeakMap<AppContext, InboundWebhookService>();

/** The inbound webhook service of an app (tests use it to inject faults through its hooks). */
export function inboundServiceOf(ctx: AppContext): InboundWebhookService {
  const service = inboundServices.get(ctx);
  if (!service) throw new Error('the webhooks module is not registered');
  return service;
}

/** Inbound platform orders and outgoing subscriptions (spec 4.5 and 6, DESIGN §6). */
export const webhooksModule: AppModule = async (api, ctx) => {
  const { config, db, queue, log } = ctx;
  const dispatcher = createDeliveryAgent({ allowPrivate: config.webhookAllowPrivateTargets, timeoutMs: DELIVERY_TIMEOUT_MS });
  api.addHook('onClose', async () => {
    await dispatcher.close();
  });
  const delivery = new WebhookDeliveryService({ db, queue, config, dispatcher, log });
  const inbound = new InboundWebhookService({ db, queue, orderEvents: ctx.orderEvents, config, log });
  inboundServices.set(ctx, inbound);
  const subscriptions = new SubscriptionsService({ db, config, delivery });

  await registerInboundRoutes(api, inbound);
  registerSubscriptionRoutes(api, subscriptions);
  registerWebhookJobs(queue, { db, config, log, inbound, delivery });

  // Runs inside the transaction that writes each order event: deliveries (and the platform report
  // of a platform order's outcome) commit with the change, or not at all.
  ctx.orderEvents.subscribe(async (trx, event) => {
    await delivery.fanOut(trx, event);
    if (config.platformApiUrl && event.type === 'order.status_changed' && (event.status === 'completed' || event.status === 'failed')) {
      const order = await orderSource(trx, event.order_id);
      if (order?.source === SHOPIFY_SOURCE && order.external_id) {
        const job: PlatformReportJob = { orderId: event.order_id };
        await queue.send(trx, PLATFORM_REPORT_QUEUE, job);
      }
    }
  });
};
