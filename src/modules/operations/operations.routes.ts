import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { apiVersionOf } from '../../http/api-version.ts';
import { errorResponses } from '../../http/errors.ts';
import { OrderIdParams } from '../orders/orders.schemas.ts';
import { toOrderTrace } from './operations.mapper.ts';
import { OrderTraceBody } from './operations.schemas.ts';
import type { OrderTrace } from './trace.service.ts';

export function registerOperationsRoutes(root: FastifyInstance, traceOrder: (orderId: number) => Promise<OrderTrace>): void {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const version = apiVersionOf(root);

  app.get('/admin/orders/:order_id/trace', {
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
    handler: async (request) => toOrderTrace(version, await traceOrder(request.params.order_id)),
  });
}
