import type { AppContext, AppModule } from '../../app-context.ts';
import { WebhookDeliveryService } from './delivery.service.ts';
import { sendDisabledNotice } from './disabled-notices.ts';
import { WebhookMessagesService } from './messages.service.ts';
import { registerMessageRetentionJob } from './messages-retention.jobs.ts';
import { registerOutboundWebhookJobs } from './outbound-webhooks.jobs.ts';
import { registerSubscriptionRoutes } from './outbound-webhooks.routes.ts';
import { DELIVERY_TIMEOUT_MS } from './sender.ts';
import { createDeliveryAgent, type Resolver } from './ssrf.ts';
import { SubscriptionsService } from './subscriptions.service.ts';

/**
 * Outgoing webhooks: subscriptions, the messages of each order event, their signed
 * delivery with retries, in sequence per order, and the SSRF guard every delivery goes through.
 */
export function createOutboundWebhooksModule(ctx: AppContext, deps: { resolve?: Resolver } = {}): AppModule {
  const { config, db, queue, log, mailer } = ctx;
  // made on the first delivery: an API process (ROLE=api) never delivers
  let agent: ReturnType<typeof createDeliveryAgent> | undefined;
  const dispatcher = () =>
    (agent ??= createDeliveryAgent({
      allowPrivate: config.webhookAllowPrivateTargets,
      timeoutMs: DELIVERY_TIMEOUT_MS,
      ...(deps.resolve ? { resolve: deps.resolve } : {}),
    }));
  const delivery = new WebhookDeliveryService({ db, queue, config, dispatcher, log });
  const subscriptions = new SubscriptionsService({ db, config, delivery });
  const messages = new WebhookMessagesService({ db, subscriptions, delivery });
  registerOutboundWebhookJobs(queue, { delivery, sendDisabledNotice: (id) => sendDisabledNotice({ db, mailer }, id), maxPerHost: config.webhookMaxConcurrencyPerHost });
  registerMessageRetentionJob(queue, { db, config, log });
  // one message per matching subscription, written as the publishing job hands the order events over
  ctx.orderEvents.subscribe({ react: (trx, events) => delivery.fanOut(trx, events) });
  return {
    routes: (api) => registerSubscriptionRoutes(api, { subscriptions, messages }),
    close: async () => {
      if (agent) await (await agent).close();
    },
  };
}
