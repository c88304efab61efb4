import type { FastifyInstance } from 'fastify';
import { errorResponses } from '../../http/errors.ts';
import { InboundHeaders, PlatformCancellationBody, PlatformOrderBody, Received } from './inbound-webhooks.schemas.ts';
import { ORDERS_CANCELLED_TOPIC, ORDERS_CREATE_TOPIC, type InboundWebhookService } from './inbound-webhooks.service.ts';

/** The platform's order webhooks, in a scope of their own whose parser keeps the raw bytes the HMAC covers. */
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
}
