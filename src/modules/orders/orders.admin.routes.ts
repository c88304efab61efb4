import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { apiVersionOf } from '../../http/api-version.ts';
import { csvRecord } from '../../http/csv.ts';
import { errorResponses } from '../../http/errors.ts';
import type { OrdersAdminService } from './orders.admin.service.ts';
import { EXPORT_COLUMNS, statusesFor, toAdminOrderDetail, toAdminOrderSummary, toExportRecord } from './orders.mapper.ts';
import { OrderIdParams, orderSchemas } from './orders.schemas.ts';

/** The administrators' order console. */
export function registerOrderAdminRoutes(root: FastifyInstance, orders: OrdersAdminService, currency: string): void {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const version = apiVersionOf(root);
  const { AdminOrderDetail, AdminOrderExportQuery, AdminOrderListQuery, AdminOrderPage } = orderSchemas(version);
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
      const { customers, ...page } = await orders.list(request.query, statusesFor(version, request.query.status), version === 'v2');
      return { ...page, items: page.items.map((o) => toAdminOrderSummary(version, o, customers.get(o.user_id))) };
    },
  });

  if (version === 'v2') {
    app.get('/admin/orders/export', {
      config,
      schema: {
        tags,
        summary: 'Export every order the filters select as CSV, newest first (administrators)',
        description:
          'The filters of GET /admin/orders (no paging). A `text/csv` attachment, streamed as it is read, with a header row: ' +
          `\`${EXPORT_COLUMNS.join(',')}\`. RFC 4180 quoting; a cell that starts with \`=\`, \`+\`, \`-\`, \`@\`, a tab or a carriage ` +
          'return gets a leading `\'` so that a spreadsheet shows it rather than running it. `total_amount` is exact, in `currency`.',
        querystring: AdminOrderExportQuery,
        response: {
          200: { description: 'the orders, one CSV record each', content: { 'text/csv': { schema: Type.String() } } },
          ...errorResponses(401, 403, 422, 429),
        },
      },
      handler: async (request, reply) => {
        const batches = await orders.export(request.query, statusesFor(version, request.query.status));
        const stamp = new Date().toISOString().replace(/[-:]|\.\d+/g, '');
        async function* records() {
          yield csvRecord(EXPORT_COLUMNS);
          for await (const batch of batches) yield batch.map((r) => csvRecord(toExportRecord(r.order, r.customer, currency))).join('');
        }
        return reply
          .type('text/csv; charset=utf-8')
          .header('content-disposition', `attachment; filename="orders-${stamp}.csv"`)
          // a stream is sent as it is read; the schema's string documents the body
          .send(Readable.from(records()) as unknown as string);
      },
    });
  }

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
