import { PassThrough } from 'node:stream';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { UserRow } from '../../db/schema.ts';
import { apiVersionOf } from '../../http/api-version.ts';
import { authUser, issuedBeforeCutoff, verifiedAccessClaims } from '../../http/auth.ts';
import { AppError, errorResponses } from '../../http/errors.ts';
import type { UserCache } from '../../http/user-cache.ts';
import { orderSchemas } from '../orders/orders.schemas.ts';
import type { LiveEvent, OrderEventFeed, Subscriber } from './event-feed.ts';

export interface LiveLimits {
  /** a comment line this often keeps proxies from closing a quiet stream (ms) */
  heartbeatMs: number;
  /** open streams one user may have in one process */
  streamsPerUser: number;
  /** the most events a Last-Event-ID sends again */
  replayLimit: number;
}

/** A slow reader's unsent frames past this end its stream; it reconnects with Last-Event-ID. */
const MAX_UNSENT_BYTES = 1024 * 1024;

const EventsHeaders = Type.Object({
  'last-event-id': Type.Optional(
    Type.String({
      pattern: '^(0|[1-9][0-9]{0,14})$',
      description: 'the `id` of the last event received: the stream sends the events after it first, oldest first (at most 1,000: after a full 1,000 it ends; reconnect with the last `id` for the rest)',
    }),
  ),
});

const DESCRIPTION = [
  'A stream of Server-Sent Events (`text/event-stream`) of the order changes the caller may see: their own orders, every order for an administrator.',
  'Authenticated by the `Authorization: Bearer` header only (a token never goes in a URL; use fetch, or an EventSource that can send headers).',
  '',
  'Each change is one frame:',
  '```',
  'id: 1042',
  'event: order.status_changed',
  'data: {"id":17,"user_id":6,"status":"completed",...}',
  '```',
  '`id` is the order event\'s id (increasing); `event` is `order.created`, `order.status_changed`, or `order.cancelled` (a change to `cancelled`);',
  '`data` is the order as `GET /api/v2/orders/{order_id}` returns it when the event is sent (it may be further along than the event).',
  'The answer\'s head is sent once the stream follows every change committed from then on: read your data again after it (or after `: stream open`) and nothing falls between the two.',
  'Comment lines keep the stream open: `: heartbeat` every 15 seconds.',
  '',
  'Reconnect with `Last-Event-ID` (the last `id` received) to get the events after it first, oldest first, then the live ones; events stay readable for at least 5 minutes (in fact as long as the order exists).',
  'One answer sends at most 1,000 of them: after a full 1,000 the stream ends, and a reconnection with the last `id` sends the next ones (none is skipped), until one goes on with the live events.',
  'The stream ends when the access token expires, the user is deactivated or signed out everywhere, or the server shuts down: reconnect (after refreshing the token).',
  'A user may hold 5 streams at once per server process; a sixth is 429 `RATE_LIMITED`. The stream counts as one request for rate limiting.',
].join('\n');

/** GET /api/v2/events: the order events of src/modules/live/event-feed.ts as Server-Sent Events. */
export function registerLiveRoutes(
  root: FastifyInstance,
  deps: { feed: OrderEventFeed; limits: LiveLimits; userCache: UserCache; loadUser: (id: number) => Promise<UserRow | undefined> },
): void {
  // v1's statuses have no `cancelled`, and its clients never had the stream
  if (apiVersionOf(root) === 'v1') return;
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const { feed, limits } = deps;
  const { OrderDetail } = orderSchemas.v2;
  // before the server waits for its open connections to end
  app.addHook('preClose', () => feed.close());

  app.get('/events', {
    config: { auth: 'user' },
    schema: {
      tags: ['orders'],
      summary: 'Follow the changes of your orders (every order, for an administrator) as Server-Sent Events',
      description: DESCRIPTION,
      headers: EventsHeaders,
      response: {
        200: {
          description: 'the event stream (frames as described above)',
          content: { 'text/event-stream': { schema: { type: 'string', examples: [': stream open\n\nid: 1042\nevent: order.created\ndata: {"id":17,"user_id":6,"status":"pending"}\n\n'] } } },
        },
        ...errorResponses(401, 403, 422, 429),
      },
    },
    handler: async (request, reply) => {
      const user = authUser(request);
      if (feed.streamsOf(user.id) >= limits.streamsPerUser) {
        throw new AppError('RATE_LIMITED', `At most ${limits.streamsPerUser} event streams may be open at once for one user; close one (another tab or client) and try again`, {
          headers: { 'retry-after': '10' },
        });
      }
      // the order's JSON exactly as GET /api/v2/orders/{order_id} serializes it
      feed.serialize ??= reply.compileSerializationSchema(OrderDetail as Record<string, unknown>) as (order: unknown) => string;
      // the claims authentication verified for this request (its expiry ends the stream)
      const claims = await verifiedAccessClaims(request, async () => null);
      const lastEventId = request.headers['last-event-id'];

      const stream = new PassThrough();
      // the live events handed over during the replay (at most replayLimit: more, and the answer ends after the replay)
      let replaying: LiveEvent[] | undefined = lastEventId === undefined ? undefined : [];
      let overflow = false;
      const write = (text: string) => {
        if (stream.writableLength > MAX_UNSENT_BYTES) end();
        else if (!stream.writableEnded) stream.write(text);
      };
      const subscriber: Subscriber = {
        userId: user.id,
        admin: user.is_admin,
        send: (e) => {
          if (!replaying) write(e.frame);
          else if (replaying.length < limits.replayLimit) replaying.push(e);
          else overflow = true;
        },
        end: () => end(),
      };
      const stillAllowed = async () => {
        const now = await deps.userCache.get(user.id, deps.loadUser);
        return now !== undefined && now.is_active && now.is_admin === user.is_admin && (!claims || !issuedBeforeCutoff(claims, now));
      };
      const heartbeat = setInterval(() => {
        void stillAllowed().then(
          (ok) => (ok ? write(': heartbeat\n\n') : end()),
          () => write(': heartbeat\n\n'),
        );
      }, limits.heartbeatMs);
      const expiry = claims ? setTimeout(() => end(), Math.max(0, claims.exp * 1000 - Date.now())) : undefined;
      function end() {
        clearInterval(heartbeat);
        clearTimeout(expiry);
        feed.unsubscribe(subscriber);
        if (!stream.writableEnded) stream.end();
      }
      stream.once('close', end);
      reply.raw.once('close', end);

      // the answer's head goes out once the feed knows where new events begin (see subscribe)
      await feed.subscribe(subscriber);
      // the stream is the body, not a value of the (documentation-only) text/event-stream schema
      void (reply as FastifyReply)
        .code(200)
        .header('content-type', 'text/event-stream; charset=utf-8')
        .header('cache-control', 'no-store')
        // a proxy that buffers answers (nginx) passes this one on as it comes
        .header('x-accel-buffering', 'no')
        .send(stream);
      // the first bytes: the client knows the stream is open before any event
      write(': stream open\n\n');
      if (lastEventId !== undefined) {
        try {
          const { events: missed, full } = await feed.replay(Number(lastEventId), { userId: user.id, admin: user.is_admin }, limits.replayLimit);
          const sent = new Set(missed.map((e) => e.id));
          // then the events the feed handed over meanwhile, without those the replay sent
          const live = (replaying ?? []).filter((e) => !sent.has(e.id));
          if (!full && !overflow) for (const e of [...missed, ...live]) write(e.frame);
          else {
            // more may lie between the replay's last event and the live ones: the answer ends after the replay, and the
            // client resumes from its last id (the rest is read from the outbox then, never held here)
            const last = missed.at(-1)?.id ?? -Infinity;
            for (const e of [...missed, ...live.filter((e) => e.id < last)].sort((a, b) => a.id - b.id)) write(e.frame);
            end();
          }
        } catch (err) {
          request.log.warn({ err }, 'live events: the replay after Last-Event-ID failed; the stream ends');
          end();
        }
        replaying = undefined;
      }
      return reply;
    },
  });
}
