import type { Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import { AppError } from '../../http/errors.ts';
import type { Mailer } from '../../mail/mailer.ts';
import { consumeEmailToken, findEmailToken, insertEmailToken, voidVerifyTokens } from './email-tokens.repository.ts';
import { hashOfMailToken, isMailToken, newMailToken } from './mail-tokens.ts';
import type { UsersService } from './users.service.ts';

/** How long the confirmation link to a new address and the revert link to the previous one work. */
export const VERIFY_TTL_SECONDS = 2 * 86400;
export const REVERT_TTL_SECONDS = 7 * 86400;

const invalid = (what: string) => new AppError('INVALID_EMAIL_TOKEN', what);
const used = () => new AppError('EMAIL_TOKEN_USED', 'This e-mail link has already been used');
const expired = () => new AppError('EMAIL_TOKEN_EXPIRED', 'This e-mail link has expired');

export interface EmailChangedNotice {
  userId: number;
  previousEmail: string;
  newEmail: string;
  changedAt: string;
}

/**
 * The two links an e-mail change mails (decision 102): a confirmation link to the new address,
 * which verifies it, and a revert link to the previous one, which restores it, verified, and ends
 * every session of the account — the previous holder's way back when someone with a stolen access
 * token moved the account to their own address.
 */
export class EmailChangeService {
  private readonly db: Db;
  private readonly mailer: Mailer;
  private readonly users: UsersService;

  constructor(deps: { db: Db; mailer: Mailer; users: UsersService }) {
    this.db = deps.db;
    this.mailer = deps.mailer;
    this.users = deps.users;
  }

  /** The confirmation e-mail, unless the account has another address or verified this one since. */
  async sendVerification(userId: number, email: string): Promise<void> {
    const user = await this.users.findById(userId);
    if (!user || user.email_verified || user.email.toLowerCase() !== email.toLowerCase()) return;
    const token = await this.issue(userId, 'verify', user.email, VERIFY_TTL_SECONDS);
    await this.mailer.send({
      to: user.email,
      subject: 'Confirm the e-mail address of your account',
      text:
        `Hello ${user.full_name},\n\nThe address of your Order Service account was changed to ${user.email}. ` +
        `Until you confirm it, orders placed with this address on the shop are not linked to the account and password recovery does not mail it.\n\n` +
        howToUse('verify-email', token, 'valid for 2 days') +
        `\n\nIf you did not ask for this, ignore this e-mail: nothing is linked to this address.\n`,
    });
  }

  /** The notice to the previous address, with the link that undoes the change. */
  async sendChangeNotice(notice: EmailChangedNotice): Promise<void> {
    const token = await this.issue(notice.userId, 'revert', notice.previousEmail, REVERT_TTL_SECONDS);
    await this.mailer.send({
      to: notice.previousEmail,
      subject: 'The e-mail address of your account was changed',
      text: emailChangedText(notice, howToUse('email-change/revert', token, 'valid for 7 days')),
    });
  }

  async verify(token: string): Promise<void> {
    const row = await this.usable('verify', token, 'Invalid e-mail confirmation token, or the account no longer has this address');
    const confirmed = await this.users.confirmEmail(row.user_id, row.email, (trx) => this.consume(trx, row.id));
    if (!confirmed) throw invalid('Invalid e-mail confirmation token, or the account no longer has this address');
  }

  async revert(token: string): Promise<void> {
    const row = await this.usable('revert', token, 'Invalid e-mail change revert token');
    const restored = await this.users.restoreEmail(row.user_id, row.email, async (trx) => {
      await this.consume(trx, row.id);
      await voidVerifyTokens(trx, row.user_id, new Date());
    });
    if (!restored) throw invalid('Invalid e-mail change revert token');
  }

  private async issue(userId: number, purpose: 'verify' | 'revert', email: string, ttlSeconds: number): Promise<string> {
    const { token, hash } = newMailToken();
    await insertEmailToken(this.db, { user_id: userId, purpose, token_hash: hash, email, expires_at: new Date(Date.now() + ttlSeconds * 1000) });
    return token;
  }

  private async usable(purpose: 'verify' | 'revert', token: string, unknown: string) {
    const row = isMailToken(token) ? await findEmailToken(this.db, purpose, hashOfMailToken(token)) : undefined;
    if (!row) throw invalid(unknown);
    if (row.used_at) throw used();
    if (row.expires_at <= new Date()) throw expired();
    return row;
  }

  /** Consumed in the transaction of the change, so of two uses of one token only one succeeds. */
  private async consume(trx: Transaction<Database>, id: number): Promise<void> {
    if (!(await consumeEmailToken(trx, id, new Date()))) throw used();
  }
}

function howToUse(route: string, token: string, validity: string): string {
  return (
    `Your token (${validity}, usable once):\n\n${token}\n\n` +
    `Send it to the service:\n\nPOST /api/v1/auth/${route}\nContent-Type: application/json\n\n{"token": "${token}"}`
  );
}

function emailChangedText(notice: EmailChangedNotice, revert: string): string {
  return (
    `Hello,\n\n` +
    `The e-mail address of your Order Service account was changed from ${notice.previousEmail} to ${maskEmail(notice.newEmail)} ` +
    `at ${notice.changedAt}. From now on, sign-in and e-mails use the new address.\n\n` +
    `If you made this change, there is nothing more to do.\n\n` +
    `If you did not, someone else may have access to your account. Undo the change: it restores ${notice.previousEmail}, ` +
    `signs everyone out of the account, and you can then choose a new password through password recovery.\n\n${revert}\n`
  );
}

/** The new address, recognisable to its owner without giving it away in full: `j***@example.com`. */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf('@');
  if (at <= 0) return '***';
  return `${email[0]}***${email.slice(at)}`;
}
