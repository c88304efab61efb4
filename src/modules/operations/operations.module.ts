import type client from 'prom-client';
import type { AppContext, AppModule } from '../../app-context.ts';
import type { InboundWebhooksModule } from '../inbound-webhooks/inbound-webhooks.module.ts';
import type { OrdersModule } from '../orders/orders.module.ts';
import { registerJobRetentionJob } from './operations.jobs.ts';
import { registerOperationsMetrics } from './operations.metrics.ts';
import { registerOperationsRoutes } from './operations.routes.ts';
import { OrderTraceService } from './trace.service.ts';

export interface OperationsModule extends AppModule {
  /** adds the jobs, orders and webhooks metrics to the /metrics registry */
  registerMetrics(registry: client.Registry): void;
}

/**
 * What operating the service needs across modules: the trace of one order (platform webhooks, order,
 * jobs, outgoing deliveries), the jobs, orders and webhooks metrics, and the purge of the links of deleted jobs.
 * It reads every other module's records through that module's service or repository, so it depends
 * on them and none of them on it.
 */
export function createOperationsModule(ctx: AppContext, deps: { orders: OrdersModule; inbound: InboundWebhooksModule }): OperationsModule {
  const { db, config, log, queue } = ctx;
  const traces = new OrderTraceService({ db, queue, orders: deps.orders.admin, inbound: deps.inbound.admin });
  registerJobRetentionJob(queue, { db, config, log });
  return {
    routes: (api) => registerOperationsRoutes(api, traces),
    registerMetrics: (registry) => registerOperationsMetrics(registry, { db, queue, cacheSeconds: config.metricsCacheSeconds, log }),
  };
}
