import type { AppContext, AppModule } from '../../app-context.ts';
import type { OrdersModule } from '../orders/orders.module.ts';
import type { UsersModule } from '../users/users.module.ts';
import { registerInboundWebhookJobs } from './inbound-webhooks.jobs.ts';
import { registerInboundRoutes } from './inbound-webhooks.routes.ts';
import { InboundWebhookService, type InboundProcessHooks } from './inbound-webhooks.service.ts';
import { SHOPIFY_SOURCE } from './shopify-order.ts';

/** The platform's order webhooks: verified, stored, acknowledged, turned into orders in the background, outcomes reported back. */
export function createInboundWebhooksModule(
  ctx: AppContext,
  deps: { orders: OrdersModule; users: UsersModule; hooks?: InboundProcessHooks },
): AppModule {
  const { config, db, queue, log } = ctx;
  const inbound = new InboundWebhookService({ db, queue, config, log, orders: deps.orders.service, users: deps.users.service, hooks: deps.hooks });
  registerInboundWebhookJobs(ctx, { inbound, orders: deps.orders.service });

  // a platform order's outcome is reported once the publishing job hands over its final status change,
  // in the trace of the change that wrote that event (the publishing job's run is linked to it)
  const reports = (e: { type: string; status: string }) => Boolean(config.platformApiUrl) && e.type === 'order.status_changed' && (e.status === 'completed' || e.status === 'failed');
  ctx.orderEvents.subscribe({
    react: async (trx, events) => {
      for (const { event, order } of events) {
        if (reports(event) && order.source === SHOPIFY_SOURCE && order.external_id) await queue.send(trx, 'webhook-platform-report', { orderId: order.id }, { traceParent: event.traceparent });
      }
    },
  });

  return { routes: (api) => registerInboundRoutes(api, inbound) };
}
