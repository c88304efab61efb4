import { once } from 'node:events';
import rateLimit, { type FastifyRateLimitStore } from '@fastify/rate-limit';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type IRateLimiterOptions } from 'rate-limiter-flexible';
import type { Config } from '../config.ts';
import { verifiedAccessClaims, type AccessTokenVerifier } from './auth.ts';
import { AppError } from './errors.ts';
import type { ReadinessCheck } from './observability.ts';

/**
 * @fastify/rate-limit, counted in Redis (REDIS_URL) or process memory, in buckets `user` (a valid token's
 * subject), `ip` (the rest, and always the routes taking a credential in their body, so one account's token
 * buys no guesses at another's), `webhook` (by IP) and `none` (uncounted). The hook runs before
 * authentication, so rejected requests and 404s count too; our store counts in memory while Redis is down.
 */

export type RateLimitBucket = 'ip' | 'webhook' | 'none';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** the rate-limit bucket: by token or IP when absent, always by IP, the webhook bucket, none */
    rateLimitBucket?: RateLimitBucket;
  }
}

/** Keys the in-memory store (no REDIS_URL) keeps at most, least recently used first out. */
const MEMORY_KEYS = 20_000;

/** How long a count waits for Redis's answer before it is made per process instead. */
const ANSWER_MS = 500;

/**
 * `promise`, or a rejection once unsettled `ANSWER_MS` after the call, one event-loop turn later (setImmediate
 * runs after the sockets are read): an answer that arrived while this process was busy wins, not counted twice.
 */
function answered<T>(promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => setImmediate(() => reject(new Error(`Redis did not answer within ${ANSWER_MS} ms`))), ANSWER_MS);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/**
 * The process's one Redis connection for counters (the rate limit, the sign-in and recovery-mail
 * limiters), so an outage is one line when the first count falls back and one when Redis is back.
 */
export interface CounterRedis {
  readonly redis: Redis;
  /** settles once the first connection is made, or after at most 1.5 s, so the first counts are not a fallback */
  readonly connected: Promise<void>;
  /** a count was made per process: logged once per outage */
  fallBack(): void;
  /** a count was made in Redis (after an outage that left the connection up, such as slow answers) */
  recovered(): void;
  close(): Promise<void>;
}

export function createCounterRedis(url: string, log: FastifyBaseLogger): CounterRedis {
  const redis = new Redis(url, {
    // a request never waits for Redis to come back
    enableOfflineQueue: false,
    enableAutoPipelining: true,
    maxRetriesPerRequest: 1,
    connectTimeout: 1000,
    // ends the commands of a hung connection; the request limit stops waiting earlier (answered)
    commandTimeout: 20 * ANSWER_MS,
    retryStrategy: (times) => Math.min(100 * times, 2000),
  });
  // without a listener ioredis prints every failed reconnect; the fallback is logged once instead
  redis.on('error', (err: Error) => log.debug({ err: err.message }, 'rate limiting: Redis error'));
  let fallingBack = false;
  const recovered = () => {
    if (fallingBack) log.info('rate limiting: Redis is back, counters are shared again');
    fallingBack = false;
  };
  redis.on('ready', recovered);
  // a new client is never ready yet
  const connected = once(redis, 'ready', { signal: AbortSignal.timeout(1500) }).then(() => {}, () => {});
  return {
    redis,
    connected,
    recovered,
    fallBack: () => {
      if (!fallingBack) log.warn('rate limiting: Redis unavailable, falling back to per-process counters');
      fallingBack = true;
    },
    close: () => connected.then(async () => void (await redis.quit().catch(() => redis.disconnect()))),
  };
}

/** A fixed-window counter in Redis while connected (`patient`: its answer awaited, not ANSWER_MS), else in memory. */
export function redisOrMemory(counters: CounterRedis, opts: IRateLimiterOptions, patient = false) {
  const { redis } = counters;
  const shared = new RateLimiterRedis({ ...opts, storeClient: redis, rejectIfRedisNotReady: true });
  const memory = new RateLimiterMemory(opts);
  return {
    async use<T>(op: (limiter: RateLimiterRedis | RateLimiterMemory) => Promise<T>): Promise<T> {
      if (redis.status === 'ready') {
        try {
          const result = await (patient ? op(shared) : answered(op(shared)));
          counters.recovered();
          return result;
        } catch (err) {
          if (err instanceof RateLimiterRes) throw err;
        }
      }
      counters.fallBack();
      return op(memory);
    },
  };
}

interface RateLimitDeps {
  config: Config;
  /** the bearer token picks the bucket: a valid one counts against its user */
  verifyAccessToken: AccessTokenVerifier;
  /** /ready's checks: Redis adds itself when configured */
  readiness: ReadinessCheck[];
  /** the counters' Redis connection (REDIS_URL), else counts per process */
  counters: CounterRedis | undefined;
}

export async function registerRateLimit(app: FastifyInstance, deps: RateLimitDeps): Promise<void> {
  const { config } = deps;
  const limits = { user: config.rateLimitAuthenticated, ip: config.rateLimitAnonymous, webhook: config.rateLimitWebhook };
  const counterOptions = { points: 1, duration: config.rateLimitWindowSeconds, keyPrefix: config.rateLimitKeyPrefix };
  const counter = deps.counters ? redisOrMemory(deps.counters, counterOptions) : undefined;

  await app.register(rateLimit, {
    // not per route: one application-wide hook (below), before authentication
    global: false,
    timeWindow: config.rateLimitWindowSeconds * 1000,
    keyGenerator: async (request) => {
      const bucket = request.routeOptions.config.rateLimitBucket;
      if (bucket === 'none') return 'none';
      if (bucket === 'webhook' || bucket === 'ip') return `${bucket}:${request.ip}`;
      const claims = await verifiedAccessClaims(request, deps.verifyAccessToken);
      return claims ? `user:${claims.sub}` : `ip:${request.ip}`;
    },
    allowList: (request) => request.routeOptions.config.rateLimitBucket === 'none',
    max: (_request, key) => limits[key.slice(0, key.indexOf(':')) as keyof typeof limits],
    errorResponseBuilder: (_request, context) => {
      const retryAfter = Math.max(1, Math.ceil(context.ttl / 1000));
      return new AppError('RATE_LIMITED', `Rate limit exceeded, retry in ${retryAfter} seconds`, { headers: { 'retry-after': String(retryAfter) } });
    },
    ...(counter ? { store: sharedStore(counter) } : { cache: MEMORY_KEYS }),
  });
  app.addHook('onRequest', app.rateLimit());

  const { counters } = deps;
  if (!counters) return;
  const { redis } = counters;
  deps.readiness.push({ name: 'redis', critical: false, check: () => answered(redis.ping()).then(() => 'ok' as const, () => 'degraded' as const) });
  app.addHook('onReady', async () => {
    await counters.connected;
    if (redis.status !== 'ready') counters.fallBack();
  });
}

/** The plugin's `store` option: `penalty` counts without a verdict (the plugin compares); one store for every route. */
function sharedStore(counter: ReturnType<typeof redisOrMemory>) {
  return class SharedStore implements FastifyRateLimitStore {
    incr(key: string, callback: (error: Error | null, result?: { current: number; ttl: number }) => void): void {
      counter.use((limiter) => limiter.penalty(key, 1)).then(
        (res) => callback(null, { current: res.consumedPoints, ttl: res.msBeforeNext }),
        (err: unknown) => callback(err instanceof Error ? err : new Error(String(err))),
      );
    }

    child(): FastifyRateLimitStore {
      return this;
    }
  };
}
