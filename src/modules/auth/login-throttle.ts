import crypto from 'node:crypto';
import type { Config } from '../../config.ts';
import { createAttemptLimiter, type AttemptLimiter, type Verdict } from '../../http/attempt-limiter.ts';
import { AppError } from '../../http/errors.ts';
import type { CounterRedis } from '../../http/rate-limits.ts';

/**
 * Password-guessing throttle an attacker cannot turn into a lockout (decisions 103, 106), in Redis when
 * configured: per e-mail and client; per e-mail across clients, a higher ceiling; or per device only,
 * with a device token of the account. An attempt counts before its password is checked (concurrent
 * guesses cannot slip under the limit); a success forgets the counts; at a limit, 429 without a lookup.
 */
export class LoginThrottle {
  private readonly perClient: AttemptLimiter;
  private readonly perEmail: AttemptLimiter;
  private readonly perDevice: AttemptLimiter;

  constructor(deps: { config: Config; counters: CounterRedis | undefined }) {
    const { config, counters } = deps;
    const limiter = (name: string, points: number) => createAttemptLimiter({ config, counters, name, points, durationSeconds: config.loginThrottleWindowSeconds });
    this.perClient = limiter('login', config.loginThrottleMaxFailures);
    this.perEmail = limiter('login-email', config.loginThrottleMaxFailuresPerEmail ?? 10 * config.loginThrottleMaxFailures);
    this.perDevice = limiter('login-device', config.loginThrottleMaxFailures);
  }

  /** Counts a sign-in attempt for `email` from `client`; throws LOGIN_THROTTLED when either limit is reached. */
  async attempt(email: string, client: string): Promise<void> {
    const pair = await this.perClient.consume(emailKey(email, client));
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
    await Promise.all([this.perClient.reset(emailKey(email, client)), this.perEmail.reset(emailKey(email))]);
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
function emailKey(email: string, client?: string): string {
  const text = client === undefined ? email.toLowerCase() : `${email.toLowerCase()}\n${client}`;
  return crypto.createHash('sha256').update(text).digest('base64url');
}

/** A device token's row id: not a secret, and the same in every process. */
function deviceKey(deviceId: number): string {
  return `device-${deviceId}`;
}
