import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { errorResponses } from '../../http/errors.ts';
import { toInboundWebhookDetail, toInboundWebhookSummary } from './inbound-webhooks.mapper.ts';
import { InboundHeaders, InboundIdParams, InboundListQuery, InboundWebhookDetail, InboundWebhookPage, PlatformCancellationBody, PlatformOrderBody, Received, Reprocessed } from './inbound-webhooks.schemas.ts';
import { ORDERS_CANCELLED_TOPIC, ORDERS_CREATE_TOPIC, type InboundWebhookService } from './inbound-webhooks.service.ts';

/** The platform's order webhooks (in a scope whose parser keeps the raw bytes the HMAC covers), and the administrators' view of them. */
export async function registerInboundRoutes(root: FastifyInstance, inbound: InboundWebhookService): Promise<void> {
  await root.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

    const route = (path: string, topic: string, summary: string, what: string) =>
      scope.post(path, {
        // the body is the signed raw bytes: its fields are documented, and checked when it is processed
        config: { auth: 'signature', rateLimitBucket: 'webhook', documentedBody: topic === ORDERS_CANCELLED_TOPIC ? PlatformCancellationBody : PlatformOrderBody },
        // the platform's order, however large: the service-wide limit rather than one sized from a schema
        bodyLimit: root.ctx.config.bodyLimitBytes,
        schema: {
          tags: ['webhooks'],
          summary,
          description:
            'Authenticated by `X-Shopify-Hmac-Sha256` (base64 HMAC-SHA256 of the raw body with the shared secret), not by a token. ' +
            'A correctly signed body is stored, whatever it contains, and processed in the background; the answer is sent as soon as it is committed. ' +
            `A body that is not a JSON object describing ${what} is recorded as failed by that processing, not refused here. ` +
            'A repeated `X-Shopify-Webhook-Id` or `X-Shopify-Event-Id`, or a body stored before (under any route, for as long as ' +
            'the stored webhook is kept), is acknowledged and not processed again. The topic is this route\'s: an ' +
            `\`X-Shopify-Topic\` other than \`${topic}\` is refused (401 \`INVALID_SIGNATURE\`, nothing stored).` +
            (topic === ORDERS_CANCELLED_TOPIC
              ? ' Processing cancels the order of that platform id with the same effects as POST /orders/{order_id}/cancel (a completed order\'s stock ' +
                'is released); a cancellation of an order not received yet is recorded and applied when its orders/create arrives.'
              : ''),
          headers: InboundHeaders,
          response: { 200: Received, ...errorResponses(401, 413, 422, 429, 500, 503) },
        },
        handler: async (request) => {
          const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
          const receipt = await inbound.receive(raw, request.headers, topic);
          return { status: 'received', webhook_id: receipt.webhookId, duplicate: receipt.duplicate };
        },
      });

    route('/webhooks/orders/create', ORDERS_CREATE_TOPIC, 'Receive an order-created webhook from the e-commerce platform', 'an order');
    route('/webhooks/orders/cancelled', ORDERS_CANCELLED_TOPIC, "Receive an order-cancelled webhook from the e-commerce platform", 'a cancelled order (its `id`, and `cancel_reason`)');
  });

  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['admin'];
  const config = { auth: 'admin' as const };

  app.get('/admin/inbound-webhooks', {
    config,
    schema: {
      tags,
      summary: 'List the stored platform webhooks, newest first (administrators)',
      querystring: InboundListQuery,
      response: { 200: InboundWebhookPage, ...errorResponses(401, 403, 422, 429) },
    },
    handler: async (request) => {
      const page = await inbound.list(request.query);
      return { ...page, items: page.items.map(toInboundWebhookSummary) };
    },
  });

  app.get('/admin/inbound-webhooks/:id', {
    config,
    schema: {
      tags,
      summary: 'Read a stored platform webhook with its headers and raw body (administrators)',
      description:
        'The headers are the platform headers stored with it, without the signature header. The body of a processed webhook is ' +
        'removed after INBOUND_PAYLOAD_RETENTION_DAYS (`raw_body` null, `payload_purged_at` set); its outcome and order link stay.',
      params: InboundIdParams,
      response: { 200: InboundWebhookDetail, ...errorResponses(401, 403, 404, 422, 429) },
    },
    handler: async (request) => toInboundWebhookDetail(await inbound.get(request.params.id)),
  });

  app.post('/admin/inbound-webhooks/:id/reprocess', {
    config,
    schema: {
      tags,
      summary: 'Queue a stored platform webhook for processing again (administrators)',
      description:
        'For instance after the product or customer it was missing has been created. A `failed` or `processed` webhook goes back to ' +
        '`received` and is processed again; a `received` one is queued once more. Safe to call any number of times, concurrently too: ' +
        'a platform order becomes one order, and its stock is reserved once. 400 `INVALID_STATE` when its payload was purged.',
      params: InboundIdParams,
      response: { 202: Reprocessed, ...errorResponses(400, 401, 403, 404, 422, 429) },
    },
    handler: async (request, reply) => {
      const result = await inbound.reprocess(request.params.id);
      return reply.code(202).send({ status: 'queued', message: result.message, order_id: result.orderId });
    },
  });
}
