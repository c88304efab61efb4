import type { FastifyInstance, FastifySchema } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { apiVersionOf } from '../../http/api-version.ts';
import { authUser } from '../../http/auth.ts';
import { errorResponses } from '../../http/errors.ts';
import { eventTypeCatalogue } from './event-types.ts';
import { toDelivery, toMessage, toMessageSummary, toSubscription, toSubscriptionStats, toSubscriptionWithSecret } from './outbound-webhooks.mapper.ts';
import {
  DeliveryPage,
  EventTypeList,
  Message,
  MessagePage,
  MessageIdParams,
  MessageQueued,
  RecoverBody,
  RecoverQueued,
  RotateSecretBody,
  SubscriptionIdParams,
  StatsQuery,
  SubscriptionListQuery,
  SubscriptionStats,
  SUBSCRIPTION_SCHEMAS,
  type TestBody,
} from './outbound-webhooks.schemas.ts';
import type { SubscriptionsService } from './subscriptions.service.ts';

export function registerSubscriptionRoutes(root: FastifyInstance, subscriptions: SubscriptionsService): void {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const version = apiVersionOf(root);
  const schemas = SUBSCRIPTION_SCHEMAS[version];
  const route = <S extends FastifySchema>(schema: S) => ({ config: { auth: 'user' as const }, schema: { tags: ['webhooks'], ...schema } });
  const byId = '/webhooks/subscriptions/:subscription_id';
  const itemsOf = <P extends { items: unknown[] }, U>(page: P, map: (item: P['items'][number]) => U): Omit<P, 'items'> & { items: U[] } => ({
    ...page,
    items: page.items.map(map),
  });

  app.post('/webhooks/subscriptions', {
    ...route({
      summary: 'Subscribe a URL to order events',
      description:
        'Deliveries follow Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256>`), ' +
        'signed with the `secret` returned here (and by rotate-secret). An administrator\'s subscriptions receive every order\'s events. ' +
        'The body is `{id, type, timestamp, data: {order_id, user_id, previous_status, status, total_amount, sequence}}`; when the new ' +
        '`status` is `failed`, `data` also has `reason` (`INSUFFICIENT_STOCK`, `PRODUCT_UNAVAILABLE`, `TOTAL_TOO_LARGE` or ' +
        '`PROCESSING_ERROR`) and `details` (for `INSUFFICIENT_STOCK`: `{lines: [{product_id, requested, available}]}`, else null). ' +
        (version === 'v1'
          ? 'A cancelled order (API v2) is a move to `failed` with `reason` `CANCELLED` here. '
          : 'The subscription receives this version\'s rendering (its `api_version` is v2): a cancellation is a move to `cancelled` whose ' +
            '`data.reason` is the reason given (or null), sent as `order.status_changed` and, to subscriptions of that kind, `order.cancelled`. ') +
        'A user has at most `WEBHOOK_MAX_SUBSCRIPTIONS_PER_USER` (default 25) subscriptions (400 `SUBSCRIPTION_LIMIT_REACHED`), ' +
        'and one per URL (400 `SUBSCRIPTION_URL_EXISTS`; URLs are compared after WHATWG normalisation, without the fragment).',
      body: schemas.SubscriptionCreateBody,
      response: { 201: schemas.SubscriptionWithSecret, ...errorResponses(400, 401, 403, 422, 429) },
    }),
    handler: async (request, reply) =>
      reply.code(201).send(toSubscriptionWithSecret(version, await subscriptions.create(authUser(request), request.body, version))),
  });

  app.get('/webhooks/subscriptions', {
    ...route({
      summary: 'List your subscriptions',
      querystring: SubscriptionListQuery,
      response: { 200: schemas.SubscriptionPage, ...errorResponses(401, 403, 422, 429) },
    }),
    handler: async (request) => itemsOf(await subscriptions.list(authUser(request), request.query), (sub) => toSubscription(version, sub)),
  });

  app.get(byId, {
    ...route({
      summary: 'Read a subscription',
      params: SubscriptionIdParams,
      response: { 200: schemas.Subscription, ...errorResponses(401, 403, 404, 422, 429) },
    }),
    handler: async (request) => toSubscription(version, await subscriptions.get(authUser(request), request.params.subscription_id)),
  });

  app.patch(byId, {
    ...route({
      summary: 'Update a subscription; only the given fields change',
      description: 'A `url` already used by another of your subscriptions is 400 `SUBSCRIPTION_URL_EXISTS`.',
      params: SubscriptionIdParams,
      body: schemas.SubscriptionUpdateBody,
      response: { 200: schemas.Subscription, ...errorResponses(400, 401, 403, 404, 422, 429) },
    }),
    handler: async (request) =>
      toSubscription(version, await subscriptions.update(authUser(request), request.params.subscription_id, request.body)),
  });

  app.delete(byId, {
    ...route({
      summary: 'Delete a subscription (soft delete)',
      params: SubscriptionIdParams,
      response: { 204: Type.Null({ description: 'Deleted' }), ...errorResponses(401, 403, 404, 422, 429) },
    }),
    handler: async (request, reply) => {
      await subscriptions.remove(authUser(request), request.params.subscription_id);
      return reply.code(204).send(null);
    },
  });

  app.get(`${byId}/deliveries`, {
    ...route({
      summary: 'Delivery attempts of a subscription, newest first',
      description:
        '`status` filters on the state of each attempt\'s message now (`pending`: being delivered, retried or waiting for an earlier ' +
        'message of its order; `delivered`; `failed`: gave up); `event_type` and `order_id` on its event.',
      params: SubscriptionIdParams,
      querystring: schemas.DeliveryListQuery,
      response: { 200: DeliveryPage, ...errorResponses(401, 403, 404, 422, 429) },
    }),
    handler: async (request) => itemsOf(await subscriptions.deliveries(authUser(request), request.params.subscription_id, request.query), toDelivery),
  });

  if (version === 'v2') {
    app.get(`${byId}/messages`, {
      ...route({
        summary: 'Messages of a subscription, newest first, each with its attempts',
        description:
          'One item per message (an event sent to the subscription, or a test send) with every attempt under it, oldest first. ' +
          '`status` and `event_type` filter. The total is counted up to 10,000 (`total_exact: false` past it). ' +
          'The body, headers and answers of one message: GET …/messages/{message_id}.',
        params: SubscriptionIdParams,
        querystring: schemas.MessageListQuery,
        response: { 200: MessagePage, ...errorResponses(401, 403, 404, 422, 429) },
      }),
      handler: async (request) => itemsOf(await subscriptions.messages(authUser(request), request.params.subscription_id, request.query), toMessageSummary),
    });

    app.get(`${byId}/stats`, {
      ...route({
        summary: "Delivery success of a subscription: its attempts per hour or day by outcome",
        description:
          'Every UTC bucket of the range, oldest first, zeros included, with the success rate of each and of the whole range. ' +
          '`from` is aligned down to its bucket. 422 `VALIDATION_ERROR` when `from` is not before `to`, or the range has more than 744 buckets.',
        params: SubscriptionIdParams,
        querystring: StatsQuery,
        response: { 200: SubscriptionStats, ...errorResponses(401, 403, 404, 422, 429) },
      }),
      handler: async (request) =>
        toSubscriptionStats(request.params.subscription_id, await subscriptions.stats(authUser(request), request.params.subscription_id, request.query)),
    });

    app.get('/webhooks/event-types', {
      ...route({
        summary: 'The event types a subscription can be sent, with the schema and a sample of each',
        description:
          'The schemas and samples are of the v2 rendering (a subscription created under v1 receives a cancellation as a move to ' +
          '`failed` with `reason` `CANCELLED`, and no `order.cancelled`). Each sample is rendered by the code that renders real messages.',
        response: { 200: EventTypeList, ...errorResponses(401, 403, 429) },
      }),
      handler: async () => ({ items: eventTypeCatalogue() }),
    });
  }

  app.get(`${byId}/messages/:message_id`, {
    ...route({
      summary: 'One message: the body and headers sent, its state and every attempt',
      params: MessageIdParams,
      response: { 200: Message, ...errorResponses(401, 403, 404, 422, 429) },
    }),
    handler: async (request) =>
      toMessage(await subscriptions.message(authUser(request), request.params.subscription_id, request.params.message_id)),
  });

  app.post(`${byId}/messages/:message_id/resend`, {
    ...route({
      summary: 'Send a delivered or failed message again',
      description:
        'Same `webhook-id` and body, fresh `webhook-timestamp` and signature, and a fresh retry schedule. A message of an order waits ' +
        'while an earlier message of that order is still pending. A pending message is 400 `INVALID_STATE`, and so is a disabled subscription.',
      params: MessageIdParams,
      response: { 202: MessageQueued, ...errorResponses(400, 401, 403, 404, 422, 429) },
    }),
    handler: async (request, reply) => {
      const { subscription_id: id, message_id: messageId } = request.params;
      const { waiting } = await subscriptions.resend(authUser(request), id, messageId);
      return reply.code(202).send({
        status: 'queued',
        message: waiting ? 'Message queued; it is sent after the earlier pending messages of its order' : 'Message queued for delivery',
        message_id: messageId,
      });
    },
  });

  app.post(`${byId}/recover`, {
    ...route({
      summary: 'Queue again every message that failed for good since a time',
      description:
        'Messages of this subscription that used up their retries at or after `since` are queued again, each with a fresh retry ' +
        'schedule. Per order they are sent in `sequence` order and never ahead of an earlier message of that order still pending. ' +
        'A disabled subscription is 400 `INVALID_STATE`: enable it first.',
      params: SubscriptionIdParams,
      body: RecoverBody,
      response: { 202: RecoverQueued, ...errorResponses(400, 401, 403, 404, 422, 429) },
    }),
    handler: async (request, reply) => {
      const since = new Date(request.body.since);
      const queued = await subscriptions.recover(authUser(request), request.params.subscription_id, since);
      return reply.code(202).send({
        status: 'queued',
        message: `${queued} message${queued === 1 ? '' : 's'} queued for delivery`,
        queued,
        since: since.toISOString(),
      });
    },
  });

  app.post(`${byId}/test`, {
    ...route({
      summary: 'Send a webhook.test event to the subscription',
      params: SubscriptionIdParams,
      ...(version === 'v2'
        ? {
            description:
              '`event_type` sends a sample of that type instead (GET /api/v2/webhooks/event-types shows each), in the subscription\'s ' +
              'rendering, with a fresh `evt_test_…` id and the time now; its message has no order.',
            body: schemas.TestBody,
          }
        : {}),
      response: { 202: MessageQueued, ...errorResponses(400, 401, 403, 404, 422, 429) },
    }),
    handler: async (request, reply) => {
      const type = version === 'v2' ? (request.body as TestBody | undefined)?.event_type : undefined;
      const messageId = await subscriptions.sendTest(authUser(request), request.params.subscription_id, type);
      return reply.code(202).send({ status: 'queued', message: 'Test event queued for delivery', message_id: messageId });
    },
  });

  app.post(`${byId}/rotate-secret`, {
    ...route({
      summary: 'Replace the signing secret, the old one overlapping for a while',
      description:
        'Deliveries are signed with the new secret from now on. For `overlap_seconds` (default 86400, 0 to 604800) they also carry ' +
        'the signature of the replaced secret: `webhook-signature: v1,<new> v1,<previous>`, so a receiver holding either verifies ' +
        'them (retries of earlier messages included). Rotating again during an overlap ends it: only the secret just replaced overlaps.',
      params: SubscriptionIdParams,
      body: RotateSecretBody,
      response: { 200: schemas.SubscriptionWithSecret, ...errorResponses(401, 403, 404, 422, 429) },
    }),
    handler: async (request) =>
      toSubscriptionWithSecret(version, await subscriptions.rotateSecret(authUser(request), request.params.subscription_id, request.body?.overlap_seconds)),
  });
}
