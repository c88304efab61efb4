import type { FastifyBaseLogger } from 'fastify';
import { RateLimiterMemory, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from '../config.ts';
import { createRedis, firstConnection, redisOrMemory } from './rate-limits.ts';

/** Counts attempts per key in a fixed window: in Redis (REDIS_URL; each attempt waits, to count exactly), else per process. */
export interface AttemptLimiter {
  /** counts one attempt of `key`; `exceeded` once the window holds more than the limit */
  consume(key: string): Promise<Verdict>;
  reset(key: string): Promise<void>;
  close(): Promise<void>;
}

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
  const counter = redisOrMemory(createRedis(config.redisUrl, log, label), log, limits, label);
  // the first attempts after start-up wait (briefly) for the first connection rather than count per process
  const connected = firstConnection(counter.redis);
  return {
    consume: (key) => connected.then(() => counter.use((limiter) => consumeNow(limiter, key))),
    reset: (key) => connected.then(async () => void (await counter.use((limiter) => limiter.delete(key)))),
    close: () => connected.then(async () => void (await counter.redis.quit().catch(() => counter.redis.disconnect()))),
  };
}

/** One counted attempt: over the limit is a verdict, not an error. */
async function consumeNow(limiter: RateLimiterAbstract, key: string): Promise<Verdict> {
  try {
    const res = await limiter.consume(key);
    return { remaining: res.remainingPoints, msBeforeNext: res.msBeforeNext, exceeded: false };
  } catch (err) {
    if (!(err instanceof RateLimiterRes)) throw err;
    return { remaining: err.remainingPoints, msBeforeNext: err.msBeforeNext, exceeded: true };
  }
}
