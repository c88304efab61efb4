import crypto from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.ts';
import { createAttemptLimiter, type AttemptLimiter } from '../../http/attempt-limiter.ts';
import { AppError } from '../../http/errors.ts';

/**
 * Protection of each account against password guessing, whatever IPs and tokens the guesses come
 * from: sign-in attempts are counted per e-mail address (LOGIN_THROTTLE_MAX_FAILURES within
 * LOGIN_THROTTLE_WINDOW_SECONDS), in Redis when configured so every API process sees one count.
 *
 * An attempt is counted before its password is checked, so concurrent guesses cannot all slip in
 * before the count reaches the limit; a successful sign-in (or a password reset) forgets the count,
 * so what remains counted are the failures. Once the limit is reached every further attempt answers
 * 429 until the window (which began with the first counted attempt) ends — without looking the
 * e-mail up, so the answer is the same whether an account exists or not, and unknown e-mails are
 * counted like known ones.
 */
export class LoginThrottle {
  private readonly limiter: AttemptLimiter;

  constructor(deps: { config: Config; log: FastifyBaseLogger }) {
    this.limiter = createAttemptLimiter({
      config: deps.config,
      log: deps.log,
      name: 'login',
      points: deps.config.loginThrottleMaxFailures,
      durationSeconds: deps.config.loginThrottleWindowSeconds,
    });
  }

  /** Counts a sign-in attempt for `email`; throws LOGIN_THROTTLED when the account is locked. */
  async attempt(email: string): Promise<void> {
    const verdict = await this.limiter.consume(keyOf(email));
    if (!verdict.exceeded) return;
    const retryAfter = Math.max(1, Math.ceil(verdict.msBeforeNext / 1000));
    throw new AppError('LOGIN_THROTTLED', `Too many failed sign-in attempts for this e-mail address; retry in ${retryAfter} seconds`, {
      headers: { 'retry-after': String(retryAfter) },
    });
  }

  /** Forgets the attempts for `email` (a successful sign-in, a password reset). */
  async clear(email: string): Promise<void> {
    await this.limiter.reset(keyOf(email));
  }

  close(): Promise<void> {
    return this.limiter.close();
  }
}

/**
 * The counter's key: the e-mail as sign-in matches it (case-insensitively), hashed so that neither
 * Redis nor the process holds the addresses, and every key has the same short length.
 */
function keyOf(email: string): string {
  return crypto.createHash('sha256').update(email.toLowerCase()).digest('base64url');
}
