import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { apiVersionOf } from '../../http/api-version.ts';
import { authUser } from '../../http/auth.ts';
import { csvRecord } from '../../http/csv.ts';
import { errorResponses } from '../../http/errors.ts';
import { EXPORT_COLUMNS, statusesFor, toAdminOrderDetail, toAdminOrderSummary, toExportRecord, toOrderDetail, toOrderEvent, toOrderSummary } from './orders.mapper.ts';
import { OrderAction, OrderCancelBody, OrderCreateBody, OrderCreated, OrderCreateHeaders, OrderIdParams, orderSchemas } from './orders.schemas.ts';
import type { OrdersAdminService, OrdersService } from './orders.service.ts';

/** The order routes of the API version `root` serves: its schemas and mappers, the same handlers. */
export function registerOrderRoutes(root: FastifyInstance, orders: OrdersService, admin: OrdersAdminService, currency: string): void {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const version = apiVersionOf(root);
  const { OrderDetail, OrderEventList, OrderListQuery, OrderPage, AdminOrderDetail, AdminOrderExportQuery, AdminOrderListQuery, AdminOrderPage } =
    orderSchemas[version];
  const tags = ['orders'];

  app.post('/orders', {
    config: { auth: 'user' },
    schema: {
      tags,
      summary: 'Place an order; it is priced and its stock reserved in the background',
      headers: OrderCreateHeaders,
      body: OrderCreateBody,
      response: { 201: OrderCreated, ...errorResponses(400, 401, 403, 422, 429) },
    },
    handler: async (request, reply) => {
      const result = await orders.create(authUser(request), request.body, request.headers['idempotency-key']);
      if (result.replayed) void reply.header('idempotent-replayed', 'true');
      return reply.code(201).send(result.body);
    },
  });

  app.get('/orders', {
    config: { auth: 'user' },
    schema: {
      tags,
      summary: "List the caller's orders, newest first",
      querystring: OrderListQuery,
      response: { 200: OrderPage, ...errorResponses(401, 403, 422, 429) },
    },
    handler: async (request) => {
      const page = await orders.list(authUser(request), request.query, statusesFor(version, request.query.status));
      return { ...page, items: page.items.map((o) => toOrderSummary(version, o)) };
    },
  });

  app.get('/orders/:order_id', {
    config: { auth: 'user' },
    schema: {
      tags,
      summary: 'Read one of your orders with its lines',
      params: OrderIdParams,
      response: { 200: OrderDetail, ...errorResponses(401, 403, 404, 422, 429) },
    },
    handler: async (request) => {
      const { order, lines } = await orders.get(authUser(request), request.params.order_id);
      return toOrderDetail(version, order, lines);
    },
  });

  app.get('/orders/:order_id/events', {
    config: { auth: 'user' },
    schema: {
      tags,
      summary: "Read the history of one of your orders: its numbered events, oldest first",
      description:
        'Every creation and status change, numbered from 1 (the `sequence` of the outgoing webhook events). ' +
        'The event that moved the order to `failed` names the `reason`, and for a stock failure `details.lines`: ' +
        'each product the stock could not cover, with the units requested and available. ' +
        "Only the order's owner may read it (administrators use GET /admin/orders/{order_id}).",
      params: OrderIdParams,
      response: { 200: OrderEventList, ...errorResponses(401, 403, 404, 422, 429) },
    },
    handler: async (request) => (await orders.events(authUser(request), request.params.order_id)).map((e) => toOrderEvent(version, e)),
  });

  app.post('/orders/:order_id/retry', {
    config: { auth: 'user' },
    schema: {
      tags,
      summary: 'Queue a failed order for processing again (owner or administrator)',
      params: OrderIdParams,
      response: { 202: OrderAction, ...errorResponses(400, 401, 403, 404, 422, 429) },
    },
    handler: async (request, reply) => {
      const order = await orders.retry(authUser(request), request.params.order_id);
      return reply.code(202).send({ status: 'queued', message: 'Order queued for processing', order_id: order.id });
    },
  });

  // v1's statuses have no `cancelled`: only v2 can cancel
  if (version === 'v2') {
    app.post('/orders/:order_id/cancel', {
      config: { auth: 'user' },
      schema: {
        tags,
        summary: 'Cancel an order (owner or administrator); a completed order\'s stock is released',
        description:
          'Allowed from `pending`, `processing` and `completed`; a `failed` or already `cancelled` order is 400 `ORDER_NOT_CANCELLABLE`. ' +
          'A completed order\'s units go back to stock with the status change; a pending or processing one is never priced or reserved afterwards. ' +
          'Writes the next order event (with the `reason`, when given) and sends `order.status_changed` and `order.cancelled` to subscriptions. ' +
          'Another user\'s order is 403, as for retry.',
        params: OrderIdParams,
        body: OrderCancelBody,
        response: { 200: OrderDetail, ...errorResponses(400, 401, 403, 404, 422, 429) },
      },
      handler: async (request) => {
        const { order, lines } = await orders.cancel(authUser(request), request.params.order_id, request.body?.reason ?? null);
        return toOrderDetail(version, order, lines);
      },
    });
  }

  // the administrators' order console
  app.get('/admin/orders', {
    config: { auth: 'admin' },
    schema: {
      tags: ['admin'],
      summary: "List every user's orders, newest first (administrators)",
      description:
        'Filters combine. `source=platform` selects the orders created from an e-commerce platform\'s webhooks, `source=api` those placed ' +
        'through POST /orders. `created_from` and `created_to` are inclusive: an ISO 8601 date-time with its offset, or a date for the ' +
        'whole of that day in UTC. `customer_email` selects the orders of the user with that e-mail (compared in any case).',
      querystring: AdminOrderListQuery,
      response: { 200: AdminOrderPage, ...errorResponses(401, 403, 422, 429) },
    },
    handler: async (request) => {
      const { customers, ...page } = await admin.list(request.query, statusesFor(version, request.query.status), version === 'v2');
      return { ...page, items: page.items.map((o) => toAdminOrderSummary(version, o, customers.get(o.user_id))) };
    },
  });

  if (version === 'v2') {
    app.get('/admin/orders/export', {
      config: { auth: 'admin' },
      schema: {
        tags: ['admin'],
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
        const batches = await admin.export(request.query, statusesFor(version, request.query.status));
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
    config: { auth: 'admin' },
    schema: {
      tags: ['admin'],
      summary: "Read any order with its lines, origin, failure reason and events (administrators)",
      params: OrderIdParams,
      response: { 200: AdminOrderDetail, ...errorResponses(401, 403, 404, 422, 429) },
    },
    handler: async (request) => {
      const { order, lines, events } = await admin.get(request.params.order_id);
      return toAdminOrderDetail(version, order, lines, events);
    },
  });
}
