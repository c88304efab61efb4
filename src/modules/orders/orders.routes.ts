import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { apiVersionOf } from '../../http/api-version.ts';
import { authUser } from '../../http/auth.ts';
import { errorResponses } from '../../http/errors.ts';
import { statusesFor, toOrderDetail, toOrderEvent, toOrderSummary } from './orders.mapper.ts';
import { OrderAction, OrderCancelBody, OrderCreateBody, OrderCreated, OrderCreateHeaders, OrderIdParams, orderSchemas } from './orders.schemas.ts';
import type { OrdersService } from './orders.service.ts';

/** The order routes of the API version `root` serves: its schemas and mappers, the same handlers. */
export function registerOrderRoutes(root: FastifyInstance, orders: OrdersService): void {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const version = apiVersionOf(root);
  const { OrderDetail, OrderEventList, OrderListQuery, OrderPage } = orderSchemas(version);
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
      return reply.code(result.statusCode).send(result.body);
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
      const { status, ...q } = request.query;
      const page = await orders.list(authUser(request), { ...q, statuses: statusesFor(version, status) });
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
  if (version === 'v1') return;

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
