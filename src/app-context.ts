import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Config } from './config.ts';
import type { DatabaseHandle, Db } from './db/database.ts';
import type { OrderEventBus } from './events/order-events.ts';
import type { ReadinessCheck } from './http/observability.ts';
import type { CounterRedis } from './http/rate-limits.ts';
import type { UserCache } from './http/user-cache.ts';
import type { JobQueue } from './jobs/queue.ts';
import type { Mailer } from './mail/mailer.ts';

/** What every module gets: configuration and the shared infrastructure, nothing module-specific. */
export interface AppContext {
  readonly config: Config;
  readonly db: Db;
  readonly database: DatabaseHandle;
  readonly queue: JobQueue;
  readonly mailer: Mailer;
  readonly log: FastifyBaseLogger;
  /** order creation and status changes, published in the changing transaction (events/order-events.ts) */
  readonly orderEvents: OrderEventBus;
  /** the user rows requests authenticate with (http/user-cache.ts) */
  readonly userCache: UserCache;
  /** /ready's checks; a module may add its own (e.g. Redis) */
  readonly readiness: ReadinessCheck[];
  /** the one Redis connection for counters (REDIS_URL): the rate limit and the attempt limiters; none counts per process */
  readonly counters: CounterRedis | undefined;
}

/** A module as its factory (`create…Module`) returns it, its queues and workers registered on `ctx.queue`. */
export interface AppModule {
  /** its routes, registered once per API version under that version's prefix (`api.apiVersion` names it) */
  routes?(api: FastifyInstance): void | Promise<void>;
  /** routes outside the versioned API (/.well-known/…) */
  rootRoutes?(app: FastifyInstance): void;
  /** releases what the module holds of its own (connections, agents) */
  close?(): Promise<void>;
}
