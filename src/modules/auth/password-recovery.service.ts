import crypto from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import type { UserRow } from '../../db/schema.ts';
import { AppError } from '../../http/errors.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { Mailer } from '../../mail/mailer.ts';
import { assertPasswordLength } from '../users/passwords.ts';
import type { UsersService } from '../users/users.service.ts';
import type { LoginThrottle } from './login-throttle.ts';
import { consumeResetToken, findResetToken, insertResetToken } from './password-reset.repository.ts';

/** 32 random bytes (256 bits), base64url: the only shape a reset token has. */
const TOKEN_BYTES = 32;
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

const hashOf = (token: string) => crypto.createHash('sha256').update(token).digest('hex');

const invalidToken = () => new AppError('INVALID_RESET_TOKEN', 'Invalid password reset token');
const usedToken = () => new AppError('RESET_TOKEN_USED', 'This password reset token has already been used');
const expiredToken = () => new AppError('RESET_TOKEN_EXPIRED', 'This password reset token has expired; request a new one');
const supersededToken = () =>
  new AppError(
    'RESET_TOKEN_SUPERSEDED',
    'This password reset token is no longer valid: a newer one was requested, or the account changed since; use the latest e-mail or request a new one',
  );

/**
 * Who may recover a password: a live account that is active, or that was created without a password
 * and awaits its first one (a platform customer, which the reset then activates). An account an
 * administrator deactivated gets nothing.
 */
function mayRecover(user: UserRow | undefined): user is UserRow {
  return user !== undefined && (user.is_active || user.awaiting_password);
}

/**
 * Password recovery by e-mail. A request only enqueues a job carrying the e-mail, whether or not an
 * account has it: the request does the same work and answers the same in the same time either way,
 * and the job (on a worker) decides whether to issue a token and send it. A token is 256 random
 * bits, stored only as its SHA-256, valid PASSWORD_RESET_TTL_SECONDS, used once, and void once a
 * newer one is issued, the account's sessions end (password changed, deactivated, deleted) or its
 * e-mail changes.
 */
export class PasswordRecoveryService {
  private readonly db: Db;
  private readonly queue: JobQueue;
  private readonly mailer: Mailer;
  private readonly users: UsersService;
  private readonly config: Config;
  private readonly throttle: LoginThrottle;
  private readonly log: FastifyBaseLogger;

  constructor(deps: { db: Db; queue: JobQueue; mailer: Mailer; users: UsersService; config: Config; throttle: LoginThrottle; log: FastifyBaseLogger }) {
    this.db = deps.db;
    this.queue = deps.queue;
    this.mailer = deps.mailer;
    this.users = deps.users;
    this.config = deps.config;
    this.throttle = deps.throttle;
    this.log = deps.log;
  }

  /** The request: one job, for any e-mail. */
  async request(email: string): Promise<void> {
    await this.queue.sendNow('password-recovery-email', { email });
  }

  /**
   * The job: a new token and its e-mail for an account that may recover its password; nothing for
   * any other e-mail. A retried job issues a fresh token (superseding one whose e-mail may not have
   * gone out), so only the latest e-mail's token works.
   */
  async sendResetEmail(email: string): Promise<void> {
    const user = await this.users.findByEmail(email);
    if (!mayRecover(user)) return;
    const token = crypto.randomBytes(TOKEN_BYTES).toString('base64url');
    const expiresAt = new Date(Date.now() + this.config.passwordResetTtlSeconds * 1000);
    await insertResetToken(this.db, { user_id: user.id, token_hash: hashOf(token), email: user.email, expires_at: expiresAt });
    await this.mailer.send({ to: user.email, ...resetMail(user, token, this.config) });
  }

  /**
   * Sets the password with a token from a recovery e-mail. The password rules are checked before the
   * token is looked at (a refused password does not use it up). The token is consumed in the
   * transaction that sets the password, so of two resets with one token only one succeeds.
   */
  async reset(token: string, newPassword: string): Promise<void> {
    assertPasswordLength(newPassword, 'new_password');
    const row = TOKEN_SHAPE.test(token) ? await findResetToken(this.db, hashOf(token)) : undefined;
    if (!row) throw invalidToken();
    const now = new Date();
    if (row.used_at) throw usedToken();
    if (row.revoked_at || row.superseded) throw supersededToken();
    if (row.expires_at <= now) throw expiredToken();
    const user = await this.users.findById(row.user_id);
    // the token went to the account's address at the time: void once the address changes
    if (!mayRecover(user) || user.email.toLowerCase() !== row.email.toLowerCase()) throw supersededToken();
    await this.users.setPassword(user.id, newPassword, {
      within: async (trx) => {
        if (!(await consumeResetToken(trx, row.id, now))) throw usedToken();
      },
    });
    // the holder proved control of the address: a lock from failed sign-ins ends with the reset
    await this.throttle.clear(user.email).catch((err: unknown) => this.log.warn({ err }, 'could not clear the sign-in throttle after a password reset'));
  }
}

function validity(seconds: number): string {
  if (seconds % 3600 === 0) return seconds === 3600 ? '1 hour' : `${seconds / 3600} hours`;
  if (seconds % 60 === 0) return seconds === 60 ? '1 minute' : `${seconds / 60} minutes`;
  return `${seconds} seconds`;
}

/** The recovery e-mail: a link when PASSWORD_RESET_URL is set, otherwise the token and the API call. */
export function resetMail(user: UserRow, token: string, config: Config): { subject: string; text: string } {
  const first = user.password_hash === null;
  const valid = `It is valid for ${validity(config.passwordResetTtlSeconds)} and can be used once; a newer request replaces it.`;
  const intro = first
    ? `An account was created for ${user.email} when you placed an order. To sign in, choose a password.`
    : `Someone (hopefully you) asked to reset the password of the account ${user.email}.`;
  const how = config.passwordResetUrl
    ? `Open this link to choose ${first ? 'your' : 'a new'} password:\n\n${config.passwordResetUrl.replaceAll('{token}', encodeURIComponent(token))}\n\n${valid}`
    : `Your password reset token:\n\n${token}\n\n${valid}\n\nTo choose ${first ? 'your' : 'a new'} password, send it to the service with the new password:\n\n` +
      `POST /api/v1/auth/reset-password\nContent-Type: application/json\n\n{"token": "${token}", "new_password": "<your new password, 8 to 72 bytes>"}`;
  const ignore = first
    ? 'If you did not expect this, ignore this e-mail.'
    : 'If you did not ask for this, ignore this e-mail: your password stays as it is.';
  return {
    subject: first ? 'Choose a password for your account' : 'Reset your password',
    text: `Hello ${user.full_name},\n\n${intro}\n\n${how}\n\n${ignore}\n`,
  };
}
