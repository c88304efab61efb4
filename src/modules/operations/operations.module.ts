import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type client from 'prom-client';
import type { AppContext, AppModule } from '../../app-context.ts';
import { apiVersionOf } from '../../http/api-version.ts';
import { errorResponses } from '../../http/errors.ts';
import { purgeJobLinks } from '../../jobs/jobs.repository.ts';
import { schedulePurge } from '../../jobs/retention.ts';
import type { OrdersModule } from '../orders/orders.module.ts';
import { OrderIdParams } from '../orders/orders.schemas.ts';
import { toOrderTrace } from './operations.mapper.ts';
import { registerOperationsMetrics } from './operations.metrics.ts';
import { OrderTraceBody } from './operations.schemas.ts';
import { traceOrder } from './trace.service.ts';

/** A never-started job lives its queue's retention (14 days) past JOB_RETENTION_DAYS; its link as long. */
const LINK_GRACE_DAYS = 14;

/** An order's trace, the metrics, the purge of deleted jobs' links: it depends on the other modules, none of them on it. */
export function createOperationsModule(ctx: AppContext, deps: { orders: OrdersModule }): AppModule & { registerMetrics(registry: client.Registry): void } {
  const { db, config, log, queue } = ctx;
  schedulePurge(queue, log, {
    name: 'jobs-purge',
    cron: '57 * * * *',
    what: 'job links',
    days: config.jobRetentionDays === 0 ? 0 : config.jobRetentionDays + LINK_GRACE_DAYS,
    batch: (before, limit) => purgeJobLinks(db, before, limit),
  });
  return {
    routes: (root) => {
      const version = apiVersionOf(root);
      root.withTypeProvider<TypeBoxTypeProvider>().get('/admin/orders/:order_id/trace', {
        config: { auth: 'admin' },
        schema: {
          tags: ['admin'],
          summary: 'The whole story of one order: platform webhooks, events, jobs and outgoing deliveries (administrators)',
          description:
            'One object: `order` (as GET /admin/orders/{order_id}), `inbound` (the platform webhooks that created or were linked to it), ' +
            '`events`, `jobs` (every job run for it, for those webhooks and for its outgoing messages) and `deliveries` (per subscription, ' +
            'each message with every attempt), and `trace_id`: the trace to look the order up in a tracing back end (docs/tracing.md). ' +
            'It shows what is still kept: finished jobs for JOB_RETENTION_DAYS, settled messages and their attempts for WEBHOOK_MESSAGE_RETENTION_DAYS.',
          params: OrderIdParams,
          response: { 200: OrderTraceBody(version), ...errorResponses(401, 403, 404, 422, 429) },
        },
        handler: async (request) => toOrderTrace(version, await traceOrder({ db, queue, orders: deps.orders.admin }, request.params.order_id)),
      });
    },
    registerMetrics: (registry) => registerOperationsMetrics(registry, { db, queue, cacheSeconds: config.metricsCacheSeconds, log }),
  };
}
