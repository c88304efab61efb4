import { once } from 'node:events';
import type { FastifyBaseLogger } from 'fastify';
import { RateLimiterMemory, RateLimiterRedis, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from '../config.ts';
import { createRedis, FallbackState, InsuranceLimiter } from './rate-limit.ts';
import { consumeNow, type Verdict } from './rate-limit-counter.ts';

/**
 * Counts attempts per key in a fixed window (the window starts with a key's first attempt), shared
 * by every API process through Redis when REDIS_URL is set, in process memory otherwise. Unlike the
 * request rate limiter, every attempt waits for Redis: the callers (sign-in) are rare and costly
 * anyway, and the count must be exact across processes. When Redis fails, counting continues per
 * process (logged once each way, like the rate limiter) and returns to Redis when it is back.
 */
export interface AttemptLimiter {
  /** counts one attempt of `key`; `exceeded` once the window holds more than the limit */
  consume(key: string): Promise<Verdict>;
  /** forgets the key's attempts */
  reset(key: string): Promise<void>;
  close(): Promise<void>;
}

export function createAttemptLimiter(opts: {
  config: Config;
  log: FastifyBaseLogger;
  /** names the counters in Redis (`<RATE_LIMIT_KEY_PREFIX>:<name>:<key>`) and in the log */
  name: string;
  points: number;
  durationSeconds: number;
}): AttemptLimiter {
  const { config, log, name } = opts;
  const limits = { points: opts.points, duration: opts.durationSeconds, keyPrefix: `${config.rateLimitKeyPrefix}:${name}` };
  if (!config.redisUrl) {
    const memory = new RateLimiterMemory(limits);
    return limiterOf(memory, async () => {});
  }
  const label = `${name} counter`;
  const fallback = new FallbackState(log, label);
  const redis = createRedis(config.redisUrl, log, label);
  redis.on('ready', () => fallback.leave());
  const limiter = new RateLimiterRedis({
    ...limits,
    storeClient: redis,
    rejectIfRedisNotReady: true,
    insuranceLimiter: new InsuranceLimiter(limits, () => fallback.enter()),
  });
  const connected = once(redis, 'ready', { signal: AbortSignal.timeout(1500) }).then(
    () => {},
    () => {},
  );
  return limiterOf(limiter, async () => {
    await connected;
    await redis.quit().catch(() => redis.disconnect());
  }, connected);
}

function limiterOf(limiter: RateLimiterAbstract, close: () => Promise<void>, connected?: Promise<void>): AttemptLimiter {
  return {
    async consume(key) {
      // the first attempts after start-up wait (briefly) for the first connection rather than count per process
      await connected;
      return consumeNow(limiter, key);
    },
    async reset(key) {
      await connected;
      await limiter.delete(key);
    },
    close,
  };
}
