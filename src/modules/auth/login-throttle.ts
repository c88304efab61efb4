import crypto from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.ts';
import { createAttemptLimiter, type AttemptLimiter, type Verdict } from '../../http/attempt-limiter.ts';
import { AppError } from '../../http/errors.ts';

/**
 * Throttling of password guessing that an attacker cannot turn into a lockout of the holder (OWASP:
 * throttle, don't lock; decision 103), counted in Redis when configured: per e-mail and client, so
 * one client's failures do not throttle the holder elsewhere; per e-mail across clients, a higher
 * ceiling; or per device only, with a device token of the account (decision 106). An attempt counts
 * before its password is checked, so concurrent guesses cannot slip in under the limit; a success
 * forgets the counts. A limit reached answers 429 without looking the e-mail up.
 */
export class LoginThrottle {
  private readonly perClient: AttemptLimiter;
  private readonly perEmail: AttemptLimiter;
  private readonly perDevice: AttemptLimiter;

  constructor(deps: { config: Config; log: FastifyBaseLogger }) {
    const { config, log } = deps;
    const limiter = (name: string, points: number) => createAttemptLimiter({ config, log, name, points, durationSeconds: config.loginThrottleWindowSeconds });
    this.perClient = limiter('login', config.loginThrottleMaxFailures);
    this.perEmail = limiter('login-email', config.loginThrottleMaxFailuresPerEmail ?? 10 * config.loginThrottleMaxFailures);
    this.perDevice = limiter('login-device', config.loginThrottleMaxFailures);
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

/** The counters' keys: the e-mail in lower case (with the client for the pair), hashed so Redis never holds the addresses. */
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
