import { RateLimiterMemory, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from '../config.ts';
import { redisOrMemory, type CounterRedis } from './rate-limits.ts';

/** Counts attempts per key in a fixed window: in Redis (REDIS_URL; each attempt waits for its answer), else per process. */
export interface AttemptLimiter {
  /** counts one attempt of `key`; `exceeded` once the window holds more than the limit */
  consume(key: string): Promise<Verdict>;
  reset(key: string): Promise<void>;
}

export interface Verdict {
  readonly remaining: number;
  readonly msBeforeNext: number;
  readonly exceeded: boolean;
}

export function createAttemptLimiter(opts: {
  config: Config;
  /** the counters' Redis connection (REDIS_URL), else counts per process */
  counters: CounterRedis | undefined;
  /** names the counters (`<RATE_LIMIT_KEY_PREFIX>:<name>:<key>`) */
  name: string;
  points: number;
  durationSeconds: number;
}): AttemptLimiter {
  const { config, counters, name } = opts;
  const limits = { points: opts.points, duration: opts.durationSeconds, keyPrefix: `${config.rateLimitKeyPrefix}:${name}` };
  if (!counters) {
    const memory = new RateLimiterMemory(limits);
    return {
      consume: (key) => consumeNow(memory, key),
      reset: async (key) => void (await memory.delete(key)),
    };
  }
  const counter = redisOrMemory(counters, limits, true);
  // the first attempts after start-up wait (briefly) for the first connection rather than count per process
  return {
    consume: (key) => counters.connected.then(() => counter.use((limiter) => consumeNow(limiter, key))),
    reset: (key) => counters.connected.then(async () => void (await counter.use((limiter) => limiter.delete(key)))),
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
