import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { UserRow } from '../../db/schema.ts';
import { createAttemptLimiter, type AttemptLimiter } from '../../http/attempt-limiter.ts';
import { AppError } from '../../http/errors.ts';
import type { CounterRedis } from '../../http/rate-limits.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { Mailer } from '../../mail/mailer.ts';
import { hashOfMailToken, isMailToken, newMailToken } from '../users/mail-tokens.ts';
import { assertPasswordLength } from '../users/passwords.ts';
import { findRecoverableByEmail, findUserById } from '../users/users.repository.ts';
import type { UsersService } from '../users/users.service.ts';
import type { LoginThrottle } from './login-throttle.ts';
import { consumeResetToken, deleteResetToken, findResetToken, insertResetToken, lockRecoveryHasUsableToken } from './auth.repository.ts';

/** At most this many recovery e-mails go to one address per hour, however many requests come. */
export const RECOVERY_EMAILS_PER_HOUR = 3;

const invalidToken = () => new AppError('INVALID_RESET_TOKEN', 'Invalid password reset token');
const usedToken = () => new AppError('RESET_TOKEN_USED', 'This password reset token has already been used');
const expiredToken = () => new AppError('RESET_TOKEN_EXPIRED', 'This password reset token has expired; request a new one');
const supersededToken = () =>
  new AppError(
    'RESET_TOKEN_SUPERSEDED',
    'This password reset token is no longer valid: the account changed since it was sent; request a new one',
  );

/** Who may recover: an active account with its address verified, or a platform customer awaiting its first password. */
function mayRecover(user: UserRow | undefined): user is UserRow {
  return user !== undefined && ((user.is_active && user.email_verified) || user.awaiting_password);
}

/**
 * Password recovery by e-mail. A request only enqueues a job (which decides), so with or without an account it answers the same
 * in the same time. It never voids a token sent before (decision 103): while one is usable nothing new is sent, so no one can keep
 * a holder's recovery e-mails useless by asking again and again.
 */
export class PasswordRecoveryService {
  private readonly deps: {
    db: Db;
    queue: JobQueue;
    mailer: Mailer;
    users: UsersService;
    config: Config;
    throttle: LoginThrottle;
    log: FastifyBaseLogger;
    counters: CounterRedis | undefined;
  };
  private readonly mailsPerAddress: AttemptLimiter;

  constructor(deps: PasswordRecoveryService['deps']) {
    this.deps = deps;
    this.mailsPerAddress = createAttemptLimiter({ config: deps.config, counters: deps.counters, name: 'recovery-mail', points: RECOVERY_EMAILS_PER_HOUR, durationSeconds: 3600 });
  }

  async request(email: string): Promise<void> {
    await this.deps.queue.sendNow('password-recovery-email', { email });
  }

  /** The job: a token and its e-mail when the account may recover and has no usable token; deleted if the send fails. */
  async sendResetEmail(email: string): Promise<void> {
    const { db, config, log } = this.deps;
    const user = await findRecoverableByEmail(db, email);
    if (!mayRecover(user)) return;
    const { token, hash } = newMailToken();
    const id = await db.transaction().execute(async (trx) => {
      if (await lockRecoveryHasUsableToken(trx, user.id, user.email)) return undefined;
      // keyed by the address's SHA-256, like the sign-in throttle: Redis never holds the address
      const quota = await this.mailsPerAddress.consume(hashOfMailToken(user.email.toLowerCase()));
      if (quota.exceeded) {
        log.info({ userId: user.id }, 'password recovery e-mail not sent: the hourly limit of the address is reached');
        return undefined;
      }
      return insertResetToken(trx, user, hash, config.passwordResetTtlSeconds);
    });
    if (id === undefined) return;
    try {
      await this.deps.mailer.send({ to: user.email, ...resetMail(user, token, config) });
    } catch (err) {
      await deleteResetToken(db, id);
      throw err;
    }
  }

  /**
   * The password is checked first (a refused one does not use the token up); the token is consumed in the password's transaction,
   * so of two resets with it only one succeeds. The address is then verified: the holder read its mail.
   */
  async reset(token: string, newPassword: string, client: string): Promise<void> {
    assertPasswordLength(newPassword, 'new_password');
    const row = isMailToken(token) ? await findResetToken(this.deps.db, hashOfMailToken(token)) : undefined;
    if (!row) throw invalidToken();
    const now = new Date();
    if (row.used_at) throw usedToken();
    if (row.revoked_at) throw supersededToken();
    if (row.expires_at <= now) throw expiredToken();
    const user = await findUserById(this.deps.db, row.user_id);
    // the token went to the account's address at the time: void once the address changes
    if (!mayRecover(user) || user.email.toLowerCase() !== row.email.toLowerCase()) throw supersededToken();
    try {
      await this.deps.users.setPassword(user.id, newPassword, {
        verifiesEmail: true,
        within: async (trx) => {
          if (!(await consumeResetToken(trx, row.id, now))) throw usedToken();
        },
      });
    } catch (err) {
      // another account verified the address after this token was sent
      if (isUniqueViolation(err)) throw supersededToken();
      throw err;
    }
    // the holder proved control of the address: the e-mail's sign-in throttle ends with the reset
    await this.deps.throttle.clear(user.email, client).catch((err: unknown) => this.deps.log.warn({ err }, 'could not clear the sign-in throttle after a password reset'));
  }

  /** A reset token for a revert notice: not a recovery request, so neither the hourly limit nor an earlier token holds it back. */
  async resetLinkAfterRevert(user: UserRow): Promise<{ instructions: string; discard: () => Promise<void> }> {
    const { db, config } = this.deps;
    const { token, hash } = newMailToken();
    const id = await insertResetToken(db, user, hash, config.passwordResetTtlSeconds);
    return { instructions: resetInstructions(token, config, 'a new'), discard: () => deleteResetToken(db, id) };
  }
}

function validity(seconds: number): string {
  if (seconds % 3600 === 0) return seconds === 3600 ? '1 hour' : `${seconds / 3600} hours`;
  if (seconds % 60 === 0) return seconds === 60 ? '1 minute' : `${seconds / 60} minutes`;
  return `${seconds} seconds`;
}

/** How to use a reset token: a link when PASSWORD_RESET_URL is set, otherwise the token and the API call. */
function resetInstructions(token: string, config: Config, which: 'your' | 'a new'): string {
  const valid = `It is valid for ${validity(config.passwordResetTtlSeconds)} and can be used once; asking again while it is valid sends nothing new.`;
  return config.passwordResetUrl
    ? `Open this link to choose ${which} password:\n\n${config.passwordResetUrl.replaceAll('{token}', encodeURIComponent(token))}\n\n${valid}`
    : `Your password reset token:\n\n${token}\n\n${valid}\n\nTo choose ${which} password, send it to the service with the new password:\n\n` +
        `POST /api/v1/auth/reset-password\nContent-Type: application/json\n\n{"token": "${token}", "new_password": "<your new password, 8 to 72 bytes>"}`;
}

/** The recovery e-mail. An account without a password that never had one chooses its first. */
export function resetMail(user: UserRow, token: string, config: Config): { subject: string; text: string } {
  // a password a revert ended is not a first one (awaiting_password stays false then)
  const first = user.password_hash === null && user.password_changed_at === null;
  const intro = first
    ? `An account was created for ${user.email} when you placed an order. To sign in, choose a password.`
    : `Someone (hopefully you) asked to reset the password of the account ${user.email}.`;
  const how = resetInstructions(token, config, first ? 'your' : 'a new');
  const ignore = first
    ? 'If you did not expect this, ignore this e-mail.'
    : 'If you did not ask for this, ignore this e-mail: your password stays as it is.';
  return {
    subject: first ? 'Choose a password for your account' : 'Reset your password',
    text: `Hello ${user.full_name},\n\n${intro}\n\n${how}\n\n${ignore}\n`,
  };
}
