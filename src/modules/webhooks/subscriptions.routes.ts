import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { authUser } from '../../http/auth.ts';
import { errorResponses } from '../../http/errors.ts';
import { toDelivery, toSubscription, toSubscriptionWithSecret } from './subscriptions.mapper.ts';
import {
  DeliveryPage,
  Subscription,
  SubscriptionCreateBody,
  SubscriptionIdParams,
  SubscriptionListQuery,
  SubscriptionPage,
  SubscriptionUpdateBody,
  SubscriptionWithSecret,
  TestQueued,
} from './subscriptions.schemas.ts';
import type { SubscriptionsService } from './subscriptions.service.ts';

export function registerSubscriptionRoutes(root: FastifyInstance, subscriptions: SubscriptionsService): void {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['webhooks'];
  const config = { auth: 'user' as const };
  const byId = '/webhooks/subscriptions/:subscription_id';

  app.post('/webhooks/subscriptions', {
    config,
    schema: {
      tags,
      summary: 'Subscribe a URL to order events',
      description:
        'Deliveries follow Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256>`), ' +
        'signed with the `secret` returned here (and by rotate-secret) only. An administrator\'s subscriptions receive every order\'s events.',
      body: SubscriptionCreateBody,
      response: { 201: SubscriptionWithSecret, ...errorResponses(401, 403, 422, 429) },
    },
    handler: async (request, reply) =>
      reply.code(201).send(toSubscriptionWithSecret(await subscriptions.create(authUser(request), request.body))),
  });

  app.get('/webhooks/subscriptions', {
    config,
    schema: {
      tags,
      summary: 'List your subscriptions',
      querystring: SubscriptionListQuery,
      response: { 200: SubscriptionPage, ...errorResponses(401, 403, 422, 429) },
    },
    handler: async (request) => {
      const page = await subscriptions.list(authUser(request), request.query);
      return { ...page, items: page.items.map(toSubscription) };
    },
  });

  app.get(byId, {
    config,
    schema: {
      tags,
      summary: 'Read a subscription',
      params: SubscriptionIdParams,
      response: { 200: Subscription, ...errorResponses(401, 403, 404, 422, 429) },
    },
    handler: async (request) => toSubscription(await subscriptions.get(authUser(request), request.params.subscription_id)),
  });

  app.patch(byId, {
    config,
    schema: {
      tags,
      summary: 'Update a subscription; only the given fields change',
      params: SubscriptionIdParams,
      body: SubscriptionUpdateBody,
      response: { 200: Subscription, ...errorResponses(401, 403, 404, 422, 429) },
    },
    handler: async (request) =>
      toSubscription(await subscriptions.update(authUser(request), request.params.subscription_id, request.body)),
  });

  app.delete(byId, {
    config,
    schema: {
      tags,
      summary: 'Delete a subscription (soft delete)',
      params: SubscriptionIdParams,
      response: { 204: Type.Null({ description: 'Deleted' }), ...errorResponses(401, 403, 404, 422, 429) },
    },
    handler: async (request, reply) => {
      await subscriptions.remove(authUser(request), request.params.subscription_id);
      return reply.code(204).send(null);
    },
  });

  app.get(`${byId}/deliveries`, {
    config,
    schema: {
      tags,
      summary: 'Delivery attempts of a subscription, newest first',
      params: SubscriptionIdParams,
      querystring: SubscriptionListQuery,
      response: { 200: DeliveryPage, ...errorResponses(401, 403, 404, 422, 429) },
    },
    handler: async (request) => {
      const page = await subscriptions.deliveries(authUser(request), request.params.subscription_id, request.query);
      return { ...page, items: page.items.map(toDelivery) };
    },
  });

  app.post(`${byId}/test`, {
    config,
    schema: {
      tags,
      summary: 'Send a `webhook.test` event to the subscription',
      params: SubscriptionIdParams,
      response: { 202: TestQueued, ...errorResponses(400, 401, 403, 404, 422, 429) },
    },
    handler: async (request, reply) => {
      const messageId = await subscriptions.sendTest(authUser(request), request.params.subscription_id);
      return reply.code(202).send({ status: 'queued', message: 'Test event queued for delivery', message_id: messageId });
    },
  });

  app.post(`${byId}/rotate-secret`, {
    config,
    schema: {
      tags,
      summary: 'Replace the signing secret; deliveries from now on use the new one',
      params: SubscriptionIdParams,
      response: { 200: SubscriptionWithSecret, ...errorResponses(401, 403, 404, 422, 429) },
    },
    handler: async (request) =>
      toSubscriptionWithSecret(await subscriptions.rotateSecret(authUser(request), request.params.subscription_id)),
  });
}
