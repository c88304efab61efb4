import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Config } from './config.ts';
import type { DatabaseHandle, Db } from './db/database.ts';
import type { JobQueue } from './jobs/queue.ts';
import type { Mailer } from './mail/mailer.ts';
import type { PasswordHasher } from './modules/auth/passwords.ts';
import type { TokenService } from './modules/auth/token.service.ts';
import type { ReadinessCheck } from './http/observability.ts';
import type { OrderEventBus } from './modules/orders/order-events.ts';
import type { UserCache } from './modules/users/user-cache.ts';

/** What every module gets: configuration and the shared infrastructure, nothing module-specific. */
export interface AppContext {
  readonly config: Config;
  readonly db: Db;
  readonly database: DatabaseHandle;
  readonly queue: JobQueue;
  readonly tokens: TokenService;
  readonly mailer: Mailer;
  readonly hasher: PasswordHasher;
  readonly log: FastifyBaseLogger;
  /** order creation and status changes, written in the changing transaction (see order-events.ts) */
  readonly orderEvents: OrderEventBus;
  /** the user rows requests authenticate with (see user-cache.ts) */
  readonly userCache: UserCache;
  /** extra readiness checks a module contributes (e.g. Redis) */
  readonly readiness: ReadinessCheck[];
}

/**
 * A module registers its routes on `api` (already under /api/v1) and its queues and workers on
 * `ctx.queue`. Everything is registered before the queue starts.
 */
export type AppModule = (api: FastifyInstance, ctx: AppContext) => void | Promise<void>;
