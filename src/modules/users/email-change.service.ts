import type { Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database, UserRow } from '../../db/schema.ts';
import { AppError } from '../../http/errors.ts';
import type { JobPayloads } from '../../jobs/registry.ts';
import type { Mailer } from '../../mail/mailer.ts';
import {
  consumeEmailToken,
  findEmailToken,
  insertEmailChange,
  insertEmailToken,
  isChangeInEffect,
  undoChangesFrom,
  voidUnlinkedVerifyTokens,
} from './email-tokens.repository.ts';
import { hashOfMailToken, isMailToken, newMailToken } from './mail-tokens.ts';
import { findUserById } from './users.repository.ts';
import type { UsersService } from './users.service.ts';

/** How long the confirmation link to a new address and the revert link to the previous one work. */
const VERIFY_TTL_SECONDS = 2 * 86400;
const REVERT_TTL_SECONDS = 7 * 86400;

const invalid = (what: string) => new AppError('INVALID_EMAIL_TOKEN', what);
const used = () => new AppError('EMAIL_TOKEN_USED', 'This e-mail link has already been used');
const expired = () => new AppError('EMAIL_TOKEN_EXPIRED', 'This e-mail link has expired');
const undone = () => invalid('This e-mail link is void: its e-mail change was undone through the link sent for an earlier change');

type EmailChangedNotice = JobPayloads['user-email-changed'];
type EmailRevertedNotice = JobPayloads['user-email-reverted'];

/** Issues a reset token for the account (auth module); `discard` deletes it when its e-mail could not be sent. */
type ResetLinkIssuer = (user: UserRow) => Promise<{ instructions: string; discard: () => Promise<void> }>;

/**
 * The links an e-mail change mails (decisions 102, 105): a confirmation link to the new address, a revert link to the previous
 * one. A revert restores the address its change replaced and undoes that change and every later one (voiding their links), never
 * an earlier one: the oldest link, the owner's, always wins, and nothing the holder of a later address voids it. It ends every
 * session and the password; the restored address gets a password reset link.
 */
export class EmailChangeService {
  private readonly deps: { db: Db; mailer: Mailer; users: UsersService };
  private resetLinks: ResetLinkIssuer | undefined;

  constructor(deps: EmailChangeService['deps']) {
    this.deps = deps;
  }

  /** How the notice of a revert gives the restored address a password reset link (set by the auth module). */
  resetLinksWith(issue: ResetLinkIssuer): void {
    this.resetLinks = issue;
  }

  /** The confirmation e-mail, unless the account has another address or verified this one since. */
  async sendVerification(userId: number, email: string, changeId?: number): Promise<void> {
    const user = await findUserById(this.deps.db, userId);
    if (!user || user.email_verified || user.email.toLowerCase() !== email.toLowerCase()) return;
    const token = await this.issue(userId, 'verify', user.email, VERIFY_TTL_SECONDS, changeId ?? null);
    await this.deps.mailer.send({
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
    // the jobs of earlier releases carry no changeId: the change is recorded now
    const changeId =
      notice.changeId ??
      (await insertEmailChange(this.deps.db, {
        user_id: notice.userId,
        previous_email: notice.previousEmail,
        new_email: notice.newEmail,
        changed_at: new Date(notice.changedAt),
      }));
    const token = await this.issue(notice.userId, 'revert', notice.previousEmail, REVERT_TTL_SECONDS, changeId);
    await this.deps.mailer.send({
      to: notice.previousEmail,
      subject: 'The e-mail address of your account was changed',
      text: emailChangedText(notice, howToUse('email-change/revert', token, 'valid for 7 days')),
    });
  }

  /** The notices of a revert, to both addresses; the restored one gets a reset link while the account has it. */
  async sendRevertNotice(notice: EmailRevertedNotice): Promise<void> {
    const user = await findUserById(this.deps.db, notice.userId);
    if (notice.replaced.toLowerCase() !== notice.restored.toLowerCase()) {
      await this.deps.mailer.send({ to: notice.replaced, subject: 'An e-mail change of your account was undone', text: replacedText(notice) });
    }
    const reset = user && user.is_active && user.email.toLowerCase() === notice.restored.toLowerCase() ? await this.resetLinks?.(user) : undefined;
    try {
      await this.deps.mailer.send({ to: notice.restored, subject: 'Your e-mail address is restored: choose a new password', text: restoredText(notice, reset?.instructions) });
    } catch (err) {
      await reset?.discard();
      throw err;
    }
  }

  async verify(token: string): Promise<void> {
    const unknown = 'Invalid e-mail confirmation token, or the account no longer has this address';
    const row = await this.usable('verify', token, unknown);
    const confirmed = await this.deps.users.confirmEmail(row.user_id, row.email, async (trx) => {
      if (row.change_id !== null && !(await isChangeInEffect(trx, row.change_id))) throw undone();
      await this.consume(trx, row.id);
    });
    if (!confirmed) throw invalid(unknown);
  }

  async revert(token: string): Promise<void> {
    const row = await this.usable('revert', token, 'Invalid e-mail change revert token');
    const changeId = row.change_id;
    if (changeId === null) throw invalid('Invalid e-mail change revert token');
    const replaced = await this.deps.users.restoreEmail(row.user_id, row.email, async (trx) => {
      const now = new Date();
      if (!(await undoChangesFrom(trx, row.user_id, changeId, now))) throw undone();
      await this.consume(trx, row.id);
      await voidUnlinkedVerifyTokens(trx, row.user_id, now);
    });
    if (replaced === undefined) throw invalid('Invalid e-mail change revert token');
  }

  private async issue(userId: number, purpose: 'verify' | 'revert', email: string, ttlSeconds: number, changeId: number | null): Promise<string> {
    const { token, hash } = newMailToken();
    await insertEmailToken(this.deps.db, {
      user_id: userId,
      purpose,
      token_hash: hash,
      email,
      expires_at: new Date(Date.now() + ttlSeconds * 1000),
      change_id: changeId,
    });
    return token;
  }

  /** A first look outside the transaction; the transaction checks again what a concurrent change may alter. */
  private async usable(purpose: 'verify' | 'revert', token: string, unknown: string) {
    const row = isMailToken(token) ? await findEmailToken(this.deps.db, purpose, hashOfMailToken(token)) : undefined;
    if (!row) throw invalid(unknown);
    if (row.used_at) throw used();
    if (row.undone_at) throw undone();
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
    `undoes every later change of the address, signs everyone out of the account and ends its password; a link to choose a new ` +
    `one then comes to ${notice.previousEmail}. Changes made since, a new password or another address, do not void this link.\n\n${revert}\n`
  );
}

function replacedText(notice: EmailRevertedNotice): string {
  return (
    `Hello,\n\n` +
    `At ${notice.at}, the e-mail address of the Order Service account that had the address ${notice.replaced} was changed back to ` +
    `${maskEmail(notice.restored)} through the link sent to that address when it was changed. This address is no longer the account's, ` +
    `every session of the account has ended and its password no longer works.\n`
  );
}

function restoredText(notice: EmailRevertedNotice, reset: string | undefined): string {
  const how = reset
    ? `Choose a new password now:\n\n${reset}`
    : 'To sign in again, choose a new password through password recovery (POST /api/v1/auth/password-recovery).';
  return (
    `Hello,\n\n` +
    `At ${notice.at}, your Order Service account got its e-mail address ${notice.restored} back (it had been changed to ` +
    `${maskEmail(notice.replaced)}). Every session of the account has ended and its password no longer works, since whoever ` +
    `changed the address may also have changed the password.\n\n${how}\n`
  );
}

/** The new address, recognisable to its owner without giving it away in full: `j***@example.com`. */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf('@');
  if (at <= 0) return '***';
  return `${email[0]}***${email.slice(at)}`;
}
