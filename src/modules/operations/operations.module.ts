import type client from 'prom-client';
import type { AppContext, AppModule } from '../../app-context.ts';
import type { OrdersModule } from '../orders/orders.module.ts';
import { registerJobRetentionJob } from './operations.jobs.ts';
import { registerOperationsMetrics } from './operations.metrics.ts';
import { registerOperationsRoutes } from './operations.routes.ts';
import { traceOrder } from './trace.service.ts';

export interface OperationsModule extends AppModule {
  /** adds the jobs, orders and webhooks metrics to the /metrics registry */
  registerMetrics(registry: client.Registry): void;
}

/**
 * What operating the service needs across modules: an order's trace, the metrics, the purge of the
 * links of deleted jobs. It depends on the other modules, none of them on it.
 */
export function createOperationsModule(ctx: AppContext, deps: { orders: OrdersModule }): OperationsModule {
  const { db, config, log, queue } = ctx;
  const traceDeps = { db, queue, orders: deps.orders.admin };
  registerJobRetentionJob(queue, { db, config, log });
  return {
    routes: (api) => registerOperationsRoutes(api, (orderId) => traceOrder(traceDeps, orderId)),
    registerMetrics: (registry) => registerOperationsMetrics(registry, { db, queue, cacheSeconds: config.metricsCacheSeconds, log }),
  };
}
