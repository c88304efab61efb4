import { once } from 'node:events';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, type RateLimiterRes, type IRateLimiterOptions } from 'rate-limiter-flexible';
import type { Config } from '../config.ts';
import { verifiedAccessClaims, type AccessTokenVerifier } from './auth.ts';
import { AppError } from './errors.ts';
import type { ReadinessCheck } from './observability.ts';
import { consumeNow, WriteBehindCounter, type Verdict } from './rate-limit-counter.ts';

/**
 * Rate limiting: one counter per caller and window, shared by every API
 * process through Redis when REDIS_URL is set, in process memory otherwise.
 *
 * Buckets:
 * - user: a request carrying a valid access token, keyed by its subject (the user id)
 * - ip: every other request (no token, or a token that does not verify), keyed by client IP; and
 *   always the routes with `config.rateLimit: 'ip'`, whatever `Authorization` header they carry: the
 *   routes that take a credential in their body (login, refresh, logout, password recovery and
 *   reset), so that holding some account's token buys no extra guesses at another's credentials
 * - webhook: routes with `config.rateLimit: 'webhook'`, keyed by IP, with its own higher limit
 * Routes with `config.rateLimit: 'none'` (health, ready, metrics, docs, JWKS) are not counted.
 *
 * The hook runs in onRequest BEFORE the authentication hook, so a request that authentication is
 * about to reject (no token on a protected route, a forged or expired token) is still counted —
 * against the IP bucket. Otherwise token guessing and credential stuffing would be free. To choose
 * the bucket the hook verifies the bearer token (signature and claims only, no database); the
 * result is memoised on the request and reused by the authentication hook. A rejected request
 * costs no database query at all.
 *
 * With Redis, a request waits for it (rate-limiter-flexible's INCR + PTTL Lua script) only when
 * its key starts a window or nears the limit; the others are counted in this process and sent in
 * batches (rate-limit-counter.ts). When Redis fails, each bucket continues on its per-process
 * memory insurance limiter (so N processes allow up to N times the limit until Redis is back); the
 * switch is logged once each way and /ready reports `redis: degraded`.
 */

export type RateLimitMode = 'default' | 'ip' | 'webhook' | 'none';

interface Bucket {
  readonly name: 'user' | 'ip' | 'webhook';
  readonly points: number;
  consume(key: string): Verdict | Promise<Verdict>;
}

/** Logs the move to per-process counters once, and the return to Redis once. */
export class FallbackState {
  private fallingBack = false;
  private readonly log: FastifyBaseLogger;
  private readonly label: string;
  /** told of every switch, either way */
  readonly onSwitch: (() => void)[] = [];

  constructor(log: FastifyBaseLogger, label = 'rate limiting') {
    this.log = log;
    this.label = label;
  }

  get active(): boolean {
    return this.fallingBack;
  }

  enter(): void {
    if (this.fallingBack) return;
    this.fallingBack = true;
    for (const listener of this.onSwitch) listener();
    this.log.warn(`${this.label}: Redis unavailable, falling back to per-process counters`);
  }

  leave(): void {
    if (!this.fallingBack) return;
    this.fallingBack = false;
    for (const listener of this.onSwitch) listener();
    this.log.info(`${this.label}: Redis is back, counters are shared again`);
  }
}

/** The memory limiter that stands in when Redis fails; every use of it means Redis failed. */
export class InsuranceLimiter extends RateLimiterMemory {
  private readonly onUse: () => void;

  constructor(opts: IRateLimiterOptions, onUse: () => void) {
    super(opts);
    this.onUse = onUse;
  }

  override consume(key: string | number, points?: number, options?: { [key: string]: unknown }): Promise<RateLimiterRes> {
    this.onUse();
    return super.consume(key, points, options);
  }
}

/** A Redis client for shared counters: never queues a command while disconnected, reconnects in the background. */
export function createRedis(url: string, log: FastifyBaseLogger, label = 'rate limiting'): Redis {
  const client = new Redis(url, {
    // fail fast instead of queueing: a request never waits for Redis to come back
    enableOfflineQueue: false,
    // the counts of many keys sent in the same tick go out in one write
    enableAutoPipelining: true,
    maxRetriesPerRequest: 1,
    connectTimeout: 1000,
    commandTimeout: 500,
    // keep reconnecting in the background, at most every 2 s, so counters return to Redis
    retryStrategy: (times) => Math.min(100 * times, 2000),
  });
  // without a listener ioredis prints every failed reconnect; the fallback is logged once instead
  client.on('error', (err: Error) => log.debug({ err: err.message }, `${label}: Redis error`));
  return client;
}

export interface RateLimitDeps {
  config: Config;
  log: FastifyBaseLogger;
  /** the bearer token picks the bucket: a valid one counts against its user */
  verifyAccessToken: AccessTokenVerifier;
  /** /ready's checks: Redis adds itself when configured */
  readiness: ReadinessCheck[];
}

export function registerRateLimit(app: FastifyInstance, deps: RateLimitDeps): void {
  const { config, log } = deps;
  const duration = config.rateLimitWindowSeconds;
  const fallback = new FallbackState(log);
  const redis = config.redisUrl ? createRedis(config.redisUrl, log) : undefined;
  redis?.on('ready', () => fallback.leave());

  const counters: WriteBehindCounter[] = [];
  const shared = () => redis?.status === 'ready' && !fallback.active;
  fallback.onSwitch.push(() => {
    for (const counter of counters) counter.forget();
  });
  const limiter = (name: Bucket['name'], points: number): Bucket => {
    const opts = { points, duration, keyPrefix: `${config.rateLimitKeyPrefix}:${name}` };
    if (!redis) {
      const memory = new RateLimiterMemory(opts);
      return { name, points, consume: (key) => consumeNow(memory, key) };
    }
    const counter = new WriteBehindCounter({
      limiter: new RateLimiterRedis({
        ...opts,
        storeClient: redis,
        rejectIfRedisNotReady: true,
        insuranceLimiter: new InsuranceLimiter(opts, () => fallback.enter()),
      }),
      points,
      windowMs: duration * 1000,
      shared,
      onSendError: (err) => log.warn({ err }, 'rate limiting: a batch of counts was lost'),
    });
    counters.push(counter);
    return { name, points, consume: (key) => counter.consume(key) };
  };
  const buckets = {
    user: limiter('user', config.rateLimitAuthenticated),
    ip: limiter('ip', config.rateLimitAnonymous),
    webhook: limiter('webhook', config.rateLimitWebhook),
  };

  app.addHook('onRequest', async (request, reply) => {
    const mode: RateLimitMode = request.routeOptions.config.rateLimit ?? 'default';
    if (mode === 'none') return;
    let bucket: Bucket;
    let key: string;
    if (mode === 'webhook') {
      bucket = buckets.webhook;
      key = request.ip;
    } else if (mode === 'ip') {
      bucket = buckets.ip;
      key = request.ip;
    } else {
      const claims = await verifiedAccessClaims(request, deps.verifyAccessToken);
      bucket = claims ? buckets.user : buckets.ip;
      key = claims ? claims.sub : request.ip;
    }
    const verdict = await bucket.consume(key);
    const reset = Math.max(0, Math.ceil(verdict.msBeforeNext / 1000));
    void reply.headers({
      'x-ratelimit-limit': bucket.points,
      'x-ratelimit-remaining': verdict.remaining,
      'x-ratelimit-reset': reset,
    });
    if (verdict.exceeded) {
      const retryAfter = Math.max(1, reset);
      throw new AppError('RATE_LIMITED', `Rate limit exceeded, retry in ${retryAfter} seconds`, {
        headers: { 'retry-after': String(retryAfter) },
      });
    }
  });

  if (!redis) return;
  deps.readiness.push({
    name: 'redis',
    critical: false,
    check: async () => {
      try {
        await redis.ping();
        return 'ok';
      } catch {
        return 'degraded';
      }
    },
  });
  app.addHook('onReady', async () => {
    // give the first connection a moment so the first requests do not count as a fallback
    if (redis.status === 'ready') return;
    const timeout = AbortSignal.timeout(1500);
    await once(redis, 'ready', { signal: timeout }).catch(() => {
      if (redis.status !== 'ready') fallback.enter();
    });
  });
  app.addHook('onClose', async () => {
    await Promise.all(counters.map((counter) => counter.close()));
    await redis.quit().catch(() => redis.disconnect());
  });
}
