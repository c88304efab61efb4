import type { FastifyBaseLogger } from 'fastify';
import { RateLimiterMemory, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from '../config.ts';
import { createRedis, FallbackState, firstConnection, redisOrMemory } from './rate-limits.ts';

/**
 * Counts attempts per key in a fixed window (the window starts with a key's first attempt), shared
 * by every API process through Redis when REDIS_URL is set, in process memory otherwise. Every
 * attempt waits for Redis: the callers (sign-in) are rare and costly anyway, and the count must be
 * exact across processes. When Redis fails, counting continues per process (logged once each way,
 * like the rate limiter, rate-limits.ts) and returns to Redis when it is back.
 */
export interface AttemptLimiter {
  /** counts one attempt of `key`; `exceeded` once the window holds more than the limit */
  consume(key: string): Promise<Verdict>;
  /** forgets the key's attempts */
  reset(key: string): Promise<void>;
  close(): Promise<void>;
}

/** One counted attempt. */
export interface Verdict {
  readonly remaining: number;
  readonly msBeforeNext: number;
  readonly exceeded: boolean;
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
    return {
      consume: (key) => consumeNow(memory, key),
      reset: async (key) => void (await memory.delete(key)),
      close: async () => {},
    };
  }
  const label = `${name} counter`;
  const fallback = new FallbackState(log, label);
  const counter = redisOrMemory(createRedis(config.redisUrl, log, label), fallback, limits);
  // the first attempts after start-up wait (briefly) for the first connection rather than count per process
  const connected = firstConnection(counter.redis);
  return {
    async consume(key) {
      await connected;
      return counter.use((limiter) => consumeNow(limiter, key));
    },
    async reset(key) {
      await connected;
      await counter.use((limiter) => limiter.delete(key));
    },
    async close() {
      await connected;
      await counter.redis.quit().catch(() => counter.redis.disconnect());
    },
  };
}

/** One counted attempt: over the limit is a verdict, not an error. */
async function consumeNow(limiter: RateLimiterAbstract, key: string): Promise<Verdict> {
  try {
    const res = await limiter.consume(key);
    return { remaining: res.remainingPoints, msBeforeNext: res.msBeforeNext, exceeded: false };
  } catch (err) {
    // a rejection is either "over the limit" (a RateLimiterRes) or a store error
    if (!(err instanceof RateLimiterRes)) throw err;
    return { remaining: err.remainingPoints, msBeforeNext: err.msBeforeNext, exceeded: true };
  }
}
