import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { apiVersionOf } from '../../http/api-version.ts';
import { errorResponses } from '../../http/errors.ts';
import type { OrdersAdminService } from './orders.admin.service.ts';
import { statusesFor, toAdminOrderDetail, toAdminOrderSummary } from './orders.mapper.ts';
import { OrderIdParams, orderSchemas } from './orders.schemas.ts';

/** The administrators' order console. */
export function registerOrderAdminRoutes(root: FastifyInstance, orders: OrdersAdminService): void {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const version = apiVersionOf(root);
  const { AdminOrderDetail, AdminOrderListQuery, AdminOrderPage } = orderSchemas(version);
  const tags = ['admin'];
  const config = { auth: 'admin' as const };

  app.get('/admin/orders', {
    config,
    schema: {
      tags,
      summary: "List every user's orders, newest first (administrators)",
      description:
        'Filters combine. `source=platform` selects the orders created from an e-commerce platform\'s webhooks, `source=api` those placed ' +
        'through POST /orders. `created_from` and `created_to` are inclusive: an ISO 8601 date-time with its offset, or a date for the ' +
        'whole of that day in UTC. `customer_email` selects the orders of the user with that e-mail (compared in any case).',
      querystring: AdminOrderListQuery,
      response: { 200: AdminOrderPage, ...errorResponses(401, 403, 422, 429) },
    },
    handler: async (request) => {
      const page = await orders.list(request.query, statusesFor(version, request.query.status));
      return { ...page, items: page.items.map((o) => toAdminOrderSummary(version, o)) };
    },
  });

  app.get('/admin/orders/:order_id', {
    config,
    schema: {
      tags,
      summary: "Read any order with its lines, origin, failure reason and events (administrators)",
      params: OrderIdParams,
      response: { 200: AdminOrderDetail, ...errorResponses(401, 403, 404, 422, 429) },
    },
    handler: async (request) => {
      const { order, lines, events } = await orders.get(request.params.order_id);
      return toAdminOrderDetail(version, order, lines, events);
    },
  });
}
