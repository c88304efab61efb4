import type { Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Database, UserRow, UserUpdate } from '../../db/schema.ts';
import { AppError } from '../../http/errors.ts';
import type { UserCache } from '../../http/user-cache.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import { insertEmailChange } from './email-tokens.repository.ts';
import { assertPasswordLength, type PasswordHasher } from './passwords.ts';
import {
  cutOffSessions,
  findPlatformCustomer,
  findRecoverableByEmail,
  findUserByEmail,
  findUserById,
  insertUser,
  lockUser,
  setUserEmail,
  setUserPassword,
  updateUser,
} from './users.repository.ts';
import { sessionCutoff, type SessionsEnder } from './sessions.ts';
import { userNotFound } from './users.reads.ts';
import type { UserCreateBody, UserUpdateBody } from './users.schemas.ts';

export class UsersService {
  private readonly db: Db;
  private readonly queue: JobQueue;
  private readonly hasher: PasswordHasher;
  private readonly userCache: UserCache;
  private readonly sessionEnders: SessionsEnder[] = [];

  constructor(deps: { db: Db; queue: JobQueue; hasher: PasswordHasher; userCache: UserCache }) {
    this.db = deps.db;
    this.queue = deps.queue;
    this.hasher = deps.hasher;
    this.userCache = deps.userCache;
  }

  /** `end` runs in every transaction that must end a user's sessions. */
  endSessionsWith(end: SessionsEnder): void {
    this.sessionEnders.push(end);
  }

  private async endSessions(trx: Transaction<Database>, userId: number): Promise<void> {
    for (const end of this.sessionEnders) await end(trx, userId);
  }

  /** Runs a change to user `id` and evicts the row from this process's cache once it has ended. */
  private async changing<T>(id: number, change: () => Promise<T>): Promise<T> {
    try {
      return await change();
    } finally {
      this.userCache.evict(id);
    }
  }

  /** Creates a user and queues the welcome e-mail in the same transaction. */
  async create(input: UserCreateBody): Promise<UserRow> {
    assertPasswordLength(input.password);
    if (await findUserByEmail(this.db, input.email)) throw new AppError('EMAIL_EXISTS', 'Email already registered');
    const password_hash = await this.hasher.hash(input.password);
    try {
      const user = await this.db.transaction().execute(async (trx) => {
        const user = await insertUser(trx, { email: input.email, full_name: input.full_name, password_hash, is_admin: false });
        await this.queue.send(trx, 'user-welcome-email', { userId: user.id });
        return user;
      });
      this.userCache.evict(user.id); // the list's totals count the new user from this response on
      return user;
    } catch (err) {
      if (isUniqueViolation(err)) throw new AppError('EMAIL_EXISTS', 'Email already registered');
      throw err;
    }
  }

  /** The live user with this id, if there is one. */
  async findById(id: number): Promise<UserRow | undefined> {
    return findUserById(this.db, id);
  }

  /** The live user with this e-mail (any case), if there is one. */
  async findByEmail(email: string): Promise<UserRow | undefined> {
    return findUserByEmail(this.db, email);
  }

  /** The account that may recover its password through this address (see findRecoverableByEmail). */
  async findRecoverable(email: string): Promise<UserRow | undefined> {
    return findRecoverableByEmail(this.db, email);
  }

  /**
   * PATCH semantics: only the given fields change. Flags only by an admin, never on their own account.
   * A change of one's own e-mail leaves it unverified until the link mailed to it is used; with
   * `currentPasswordForEmail` (API v2) it also needs the current password, so a stolen access
   * token alone cannot move the account to another address.
   */
  async update(actor: UserRow, id: number, input: UserUpdateBody, opts: { currentPasswordForEmail?: boolean } = {}): Promise<UserRow> {
    const self = actor.id === id;
    if (!self && !actor.is_admin) throw new AppError('FORBIDDEN', 'Not enough permissions to update this user');
    const touchesFlags = input.is_active !== undefined || input.is_admin !== undefined;
    if (touchesFlags && !actor.is_admin) {
      throw new AppError('FORBIDDEN', 'Only administrators can change is_active or is_admin');
    }
    if (touchesFlags && self) {
      throw new AppError('FORBIDDEN', 'Administrators cannot change is_active or is_admin on their own account');
    }
    const current = await findUserById(this.db, id);
    if (!current) throw userNotFound();
    if (input.email !== undefined && input.email.toLowerCase() !== current.email.toLowerCase()) {
      const other = await findUserByEmail(this.db, input.email);
      if (other && other.id !== id) throw new AppError('EMAIL_EXISTS', 'Email already in use');
    }
    const movesEmail = input.email !== undefined && input.email.toLowerCase() !== current.email.toLowerCase();
    if (self && movesEmail && opts.currentPasswordForEmail) await this.assertCurrentPassword(current, input.current_password);
    const { current_password: _proof, ...fields } = input;
    const changes = Object.values(fields).some((v) => v !== undefined);
    if (!changes) return current; // an empty PATCH changes nothing, not even updated_at
    const now = new Date();
    const patch: UserUpdate = { updated_at: now };
    if (input.full_name !== undefined) patch.full_name = input.full_name;
    if (input.email !== undefined) patch.email = input.email;
    // an administrator vouches for the address they set, as when they create an account
    if (movesEmail) patch.email_verified = !self;
    // an administrator's decision on the flag settles it: a password set later no longer activates
    if (input.is_active !== undefined) {
      patch.is_active = input.is_active;
      patch.awaiting_password = false;
    }
    if (input.is_admin !== undefined) patch.is_admin = input.is_admin;
    try {
      return await this.changing(id, () =>
        this.db.transaction().execute(async (trx) => {
          const updated = await updateUser(trx, id, patch);
          if (!updated) throw userNotFound();
          if (input.is_active === false) {
            // the access tokens end too, so a later reactivation does not revive them
            await cutOffSessions(trx, id, sessionCutoff(now.getTime()));
            await this.endSessions(trx, id);
          }
          if (movesEmail) {
            // recorded in order: a revert undoes its change and every later one (decision 105)
            const changeId = await insertEmailChange(trx, { user_id: id, previous_email: current.email, new_email: updated.email, changed_at: now });
            if (self) await this.queue.send(trx, 'user-email-verification', { userId: id, email: updated.email, changeId });
            // the previous address hears of it: whoever changed it may not be the account's holder
            await this.queue.send(trx, 'user-email-changed', {
              userId: id,
              previousEmail: current.email,
              newEmail: updated.email,
              changedAt: now.toISOString(),
              changeId,
            });
          }
          return updated;
        }),
      );
    } catch (err) {
      if (isUniqueViolation(err)) throw new AppError('EMAIL_EXISTS', 'Email already in use');
      throw err;
    }
  }

  private async assertCurrentPassword(user: UserRow, password: string | undefined): Promise<void> {
    if (password === undefined) {
      const msg = 'required to change your own e-mail address';
      throw new AppError('VALIDATION_ERROR', `Validation failed: body.current_password: ${msg}`, {
        errors: [{ loc: ['body', 'current_password'], msg, type: 'missing' }],
      });
    }
    if (!(await this.hasher.verify(password, user.password_hash))) throw new AppError('INVALID_CREDENTIALS', 'Current password is incorrect');
  }

  /**
   * Marks the address verified while the account still has it; `within` runs first in the same
   * transaction, under the user's row lock (it checks and consumes the confirmation token). False,
   * with the token left as it was, when the account has another address now.
   */
  async confirmEmail(userId: number, email: string, within: (trx: Transaction<Database>) => Promise<void>): Promise<boolean> {
    return this.emailChange(userId, () =>
      this.db.transaction().execute(async (trx) => {
        const current = await lockUser(trx, userId);
        if (!current || current.email.toLowerCase() !== email.toLowerCase()) return false;
        await within(trx);
        return (await setUserEmail(trx, userId, { email, at: new Date(), onlyIf: email })) !== undefined;
      }),
    );
  }

  /**
   * Undoes an e-mail change (decision 105): the previous address comes back verified, every session
   * ends and so does the password (whoever made the change may have set it), and both addresses are
   * told. `within` runs first in the same transaction, under the user's row lock (it undoes the
   * change and every later one, and consumes the revert token). The address replaced, or undefined
   * when there is no such live user.
   */
  async restoreEmail(userId: number, email: string, within: (trx: Transaction<Database>) => Promise<void>): Promise<string | undefined> {
    return this.emailChange(userId, () =>
      this.db.transaction().execute(async (trx) => {
        const current = await lockUser(trx, userId);
        if (!current) return undefined;
        await within(trx);
        const at = new Date();
        if (!(await setUserEmail(trx, userId, { email, at, revert: true }))) return undefined;
        await this.endSessions(trx, userId);
        await this.queue.send(trx, 'user-email-reverted', { userId, restored: email, replaced: current.email, at: at.toISOString() });
        return current.email;
      }),
    );
  }

  /** An address taken meanwhile by a verified holder is EMAIL_EXISTS, not a 500. */
  private async emailChange<T>(userId: number, change: () => Promise<T>): Promise<T> {
    try {
      return await this.changing(userId, change);
    } catch (err) {
      if (isUniqueViolation(err)) throw new AppError('EMAIL_EXISTS', 'Email already in use by another account');
      throw err;
    }
  }

  /**
   * Soft delete: the row stays, marked deleted and inactive; its sessions end. Like deactivation,
   * never on the caller's own account (an administrator cannot lock themselves out).
   */
  async remove(actor: UserRow, id: number): Promise<void> {
    if (actor.id === id) throw new AppError('FORBIDDEN', 'Administrators cannot delete their own account');
    await this.changing(id, () =>
      this.db.transaction().execute(async (trx) => {
        const now = new Date();
        const deleted = await updateUser(trx, id, { deleted_at: now, is_active: false, updated_at: now });
        if (!deleted) throw userNotFound();
        await this.endSessions(trx, id);
      }),
    );
  }

  /**
   * Sets a new password (checked for length, then hashed) and ends every session of the user: its
   * refresh tokens are revoked and its access tokens issued until now are refused. An account
   * awaiting its first password becomes active. `within` runs first in the same transaction (the
   * auth module consumes a reset token there: if it throws, nothing changes).
   */
  async setPassword(
    userId: number,
    newPassword: string,
    opts: { field?: string; within?: (trx: Transaction<Database>) => Promise<void>; verifiesEmail?: boolean } = {},
  ): Promise<UserRow> {
    assertPasswordLength(newPassword, opts.field ?? 'new_password');
    const password_hash = await this.hasher.hash(newPassword);
    return this.changing(userId, () =>
      this.db.transaction().execute(async (trx) => {
        await opts.within?.(trx);
        const at = new Date();
        const updated = await setUserPassword(trx, userId, {
          password_hash,
          at,
          cutoff: sessionCutoff(at.getTime()),
          verifiesEmail: opts.verifiesEmail ?? false,
        });
        if (!updated) throw userNotFound();
        await this.endSessions(trx, userId);
        return updated;
      }),
    );
  }

  /** Signs the user out everywhere: every refresh token revoked, every access token issued until now refused. */
  async endAllSessions(userId: number): Promise<void> {
    await this.changing(userId, () =>
      this.db.transaction().execute(async (trx) => {
        if (!(await cutOffSessions(trx, userId, sessionCutoff()))) throw userNotFound();
        await this.endSessions(trx, userId);
      }),
    );
  }

  /**
   * The customer of a platform order, in the order's transaction: the live user holding that e-mail
   * verified (or the platform customer made for it before), else a new account that cannot sign in
   * until its holder sets a password through password recovery, which activates and verifies it.
   * An account that claimed the address without verifying it never gets the shopper's orders.
   */
  async findOrCreateCustomer(trx: Transaction<Database>, customer: { email: string; fullName: string }): Promise<UserRow> {
    const existing = await findPlatformCustomer(trx, customer.email);
    if (existing) return existing;
    return insertUser(trx, {
      email: customer.email,
      full_name: customer.fullName,
      password_hash: null,
      is_active: false,
      awaiting_password: true,
      email_verified: false,
    });
  }
}
