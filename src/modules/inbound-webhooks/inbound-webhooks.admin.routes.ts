import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { errorResponses } from '../../http/errors.ts';
import type { InboundWebhooksAdminService } from './inbound-webhooks.admin.service.ts';
import { toInboundWebhookDetail, toInboundWebhookSummary } from './inbound-webhooks.mapper.ts';
import { InboundIdParams, InboundListQuery, InboundWebhookDetail, InboundWebhookPage, Reprocessed } from './inbound-webhooks.schemas.ts';

/** The administrators' view of the platform's webhooks: what arrived, what became of it, and a way to run it again. */
export function registerInboundAdminRoutes(root: FastifyInstance, inbound: InboundWebhooksAdminService): void {
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
