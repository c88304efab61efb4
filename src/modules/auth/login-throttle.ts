import crypto from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.ts';
import { createAttemptLimiter, type AttemptLimiter, type Verdict } from '../../http/attempt-limiter.ts';
import { AppError } from '../../http/errors.ts';

/**
 * Protection of each account against password guessing that an attacker cannot turn into a lockout
 * of its holder (OWASP: throttle, don't lock; decision 103). Sign-in attempts are counted twice, in
 * Redis when configured so every API process sees one count:
 * - per e-mail and client (LOGIN_THROTTLE_MAX_FAILURES within LOGIN_THROTTLE_WINDOW_SECONDS): the
 *   client is the request's address, the forwarded one with TRUST_PROXY, so failures from one
 *   client do not throttle the holder signing in from another;
 * - per e-mail across all clients, a higher ceiling (LOGIN_THROTTLE_MAX_FAILURES_PER_EMAIL, 10 × the
 *   first by default) against guessing spread over many addresses.
 *
 * A sign-in that presents a device token of the account (decision 106) is counted per device only,
 * with the per-client limit: neither the ceiling nor any other client's failures refuse it, and its
 * own failures count towards neither.
 *
 * An attempt is counted before its password is checked, so concurrent guesses cannot all slip in
 * before the count reaches the limit; a successful sign-in forgets the counts, so what remains
 * counted are the failures. A password reset forgets the e-mail's ceiling and the resetting client's
 * count. Once a limit is reached every further attempt answers 429 until the window ends — without
 * looking the e-mail up, so the answer is the same whether an account exists or not.
 */
export class LoginThrottle {
  private readonly perClient: AttemptLimiter;
  private readonly perEmail: AttemptLimiter;
  private readonly perDevice: AttemptLimiter;

  constructor(deps: { config: Config; log: FastifyBaseLogger }) {
    const { config, log } = deps;
    const durationSeconds = config.loginThrottleWindowSeconds;
    this.perClient = createAttemptLimiter({ config, log, name: 'login', points: config.loginThrottleMaxFailures, durationSeconds });
    this.perEmail = createAttemptLimiter({
      config,
      log,
      name: 'login-email',
      points: config.loginThrottleMaxFailuresPerEmail ?? 10 * config.loginThrottleMaxFailures,
      durationSeconds,
    });
    this.perDevice = createAttemptLimiter({ config, log, name: 'login-device', points: config.loginThrottleMaxFailures, durationSeconds });
  }

  /** Counts a sign-in attempt for `email` from `client`; throws LOGIN_THROTTLED when either limit is reached. */
  async attempt(email: string, client: string): Promise<void> {
    const pair = await this.perClient.consume(pairKey(email, client));
    // attempts the client's own limit refuses do not count against the holder's other clients
    const verdict: Verdict = pair.exceeded ? pair : await this.perEmail.consume(emailKey(email));
    throwIfExceeded(verdict);
  }

  /** Counts a sign-in attempt from the device `deviceId` (a device token of the account); throws LOGIN_THROTTLED at its limit. */
  async attemptOnDevice(deviceId: number): Promise<void> {
    throwIfExceeded(await this.perDevice.consume(deviceKey(deviceId)));
  }

  /** Forgets the attempts of a device (its holder signed in). */
  async clearDevice(deviceId: number): Promise<void> {
    await this.perDevice.reset(deviceKey(deviceId));
  }

  /** Forgets the attempts for `email`: from `client`, and across all clients (a successful sign-in, a password reset). */
  async clear(email: string, client: string): Promise<void> {
    await Promise.all([this.perClient.reset(pairKey(email, client)), this.perEmail.reset(emailKey(email))]);
  }

  async close(): Promise<void> {
    await Promise.all([this.perClient.close(), this.perEmail.close(), this.perDevice.close()]);
  }
}

function throwIfExceeded(verdict: Verdict): void {
  if (!verdict.exceeded) return;
  const retryAfter = Math.max(1, Math.ceil(verdict.msBeforeNext / 1000));
  throw new AppError('LOGIN_THROTTLED', `Too many failed sign-in attempts for this e-mail address; retry in ${retryAfter} seconds`, {
    headers: { 'retry-after': String(retryAfter) },
  });
}

/**
 * The counters' keys: the e-mail as sign-in matches it (case-insensitively), with the client's
 * address for the first, hashed so that neither Redis nor the process holds the addresses, and
 * every key has the same short length.
 */
function emailKey(email: string): string {
  return crypto.createHash('sha256').update(email.toLowerCase()).digest('base64url');
}

function pairKey(email: string, client: string): string {
  return crypto.createHash('sha256').update(`${email.toLowerCase()}\n${client}`).digest('base64url');
}

/** A device token's row id: not a secret, and the same in every process. */
function deviceKey(deviceId: number): string {
  return `device-${deviceId}`;
}
