import type { AppContext, AppModule } from '../../app-context.ts';
import { schedulePurge } from '../../jobs/retention.ts';
import { WebhookDeliveryService } from './delivery.service.ts';
import { registerSubscriptionRoutes } from './outbound-webhooks.routes.ts';
import { DELIVERY_TIMEOUT_MS } from './sender.ts';
import { createDeliveryAgent, type Resolver } from './ssrf.ts';
import { SubscriptionsService } from './subscriptions.service.ts';
import { purgeSettledMessages } from './trace.repository.ts';

/** Deliveries wait on the network; more of them run at once than CPU-bound jobs. */
const DELIVERY_CONCURRENCY = 8;

/** Outgoing webhooks: subscriptions, a message per order event, its signed delivery with retries in order, behind the SSRF guard. */
export function createOutboundWebhooksModule(ctx: AppContext, deps: { resolve?: Resolver } = {}): AppModule {
  const { config, db, queue, log, mailer } = ctx;
  // made on the first delivery: an API process (ROLE=api) never delivers
  let agent: ReturnType<typeof createDeliveryAgent> | undefined;
  const dispatcher = () =>
    (agent ??= createDeliveryAgent({ allowPrivate: config.webhookAllowPrivateTargets, timeoutMs: DELIVERY_TIMEOUT_MS, resolve: deps.resolve }));
  const delivery = new WebhookDeliveryService({ db, queue, config, dispatcher, log, mailer });
  const subscriptions = new SubscriptionsService({ db, config, delivery });
  // one job per attempt, fetched one at a time so a slow receiver holds nothing behind it; at most maxPerHost per destination
  const maxPerHost = config.webhookMaxConcurrencyPerHost;
  queue.define({ name: 'webhook-deliver', expireInSeconds: Math.ceil(DELIVERY_TIMEOUT_MS / 1000) * 4, batchSize: 1 });
  queue.work('webhook-deliver', (job) => delivery.deliver(job.data), Math.max(DELIVERY_CONCURRENCY, maxPerHost), {
    perGroup: maxPerHost,
    // each retry of a message is a job of its own: the span reports the message's attempt
    attempt: (job) => job.data.attempt,
  });
  queue.define({ name: 'webhook-disabled-email' });
  queue.work('webhook-disabled-email', (job) => delivery.sendDisabledNotice(job.data.subscriptionId));
  // hourly: messages settled more than WEBHOOK_MESSAGE_RETENTION_DAYS ago go, with their attempts
  schedulePurge(queue, log, {
    name: 'webhook-messages-purge',
    cron: '47 * * * *',
    what: 'outgoing webhook messages',
    days: config.webhookMessageRetentionDays,
    batch: (before, limit) => purgeSettledMessages(db, before, limit),
  });
  // one message per matching subscription, written as the publishing job hands the order events over
  ctx.orderEvents.subscribe({ react: (trx, events) => delivery.fanOut(trx, events) });
  return {
    routes: (api) => registerSubscriptionRoutes(api, subscriptions),
    close: async () => {
      if (agent) await (await agent).close();
    },
  };
}
