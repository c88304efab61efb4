import type { Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Database, UserRow, UserUpdate } from '../../db/schema.ts';
import { cappedPageOf, pageOf, type CappedPageResult, type PageResult } from '../../http/common.schemas.ts';
import { AppError } from '../../http/errors.ts';
import type { UserCache } from '../../http/user-cache.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import { insertEmailChange } from './email-tokens.repository.ts';
import { assertPasswordLength, invalidBodyField, type PasswordHasher } from './passwords.ts';
import {
  countUsers,
  cutOffSessions,
  findPlatformCustomer,
  findUserByEmail,
  findUserById,
  insertUser,
  listUsers,
  lockUser,
  searchUsers,
  setUserEmail,
  setUserPassword,
  updateUser,
} from './users.repository.ts';
import type { AdminUserListQuery, UserCreateBody, UserUpdateBody } from './users.schemas.ts';

const userNotFound = () => new AppError('NOT_FOUND', 'User not found');

/** Ends a user's sessions in the transaction that changes the user (the auth module's tokens). */
export type SessionsEnder = (trx: Transaction<Database>, userId: number) => Promise<void>;

/** A unique violation on the address is EMAIL_EXISTS, not a 500. */
async function orEmailExists<T>(message: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (isUniqueViolation(err)) throw new AppError('EMAIL_EXISTS', message);
    throw err;
  }
}

export class UsersService {
  private readonly deps: { db: Db; queue: JobQueue; hasher: PasswordHasher; userCache: UserCache };
  private readonly sessionEnders: SessionsEnder[] = [];

  constructor(deps: UsersService['deps']) {
    this.deps = deps;
  }

  /** `ends` run in every transaction that must end a user's sessions. */
  endSessionsWith(...ends: SessionsEnder[]): void {
    this.sessionEnders.push(...ends);
  }

  private async endSessions(trx: Transaction<Database>, userId: number): Promise<void> {
    for (const end of this.sessionEnders) await end(trx, userId);
  }

  /** Runs a transaction changing user `id` and evicts the row from this process's cache once it has ended. */
  private async changing<T>(id: number, change: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    try {
      return await this.deps.db.transaction().execute(change);
    } finally {
      this.deps.userCache.evict(id);
    }
  }

  async get(id: number): Promise<UserRow> {
    const user = await findUserById(this.deps.db, id);
    if (!user) throw userNotFound();
    return user;
  }

  async list(q: { page: number; page_size: number; is_active?: boolean }): Promise<PageResult<UserRow>> {
    const { db, userCache } = this.deps;
    const [rows, total] = await Promise.all([
      listUsers(db, { limit: q.page_size, offset: (q.page - 1) * q.page_size, isActive: q.is_active }),
      userCache.total(`is_active=${q.is_active}`, () => countUsers(db, q.is_active)),
    ]);
    return pageOf(rows, total, q.page, q.page_size);
  }

  /** The users `actor` may list in v2: all for an administrator, else their own account (v1's `list` shows every user). */
  async listVisibleTo(actor: UserRow, q: { page: number; page_size: number; is_active?: boolean }): Promise<PageResult<UserRow>> {
    if (actor.is_admin) return this.list(q);
    const self = await findUserById(this.deps.db, actor.id);
    const own = self && (q.is_active === undefined || self.is_active === q.is_active) ? [self] : [];
    const offset = (q.page - 1) * q.page_size;
    return pageOf(own.slice(offset, offset + q.page_size), own.length, q.page, q.page_size);
  }

  /** A user `actor` may read in API v2: any for an administrator, else only their own (another is 404, as if absent). */
  async getVisibleTo(actor: UserRow, id: number): Promise<UserRow> {
    if (!actor.is_admin && actor.id !== id) throw userNotFound();
    return this.get(id);
  }

  /** The administrators' search by e-mail, with the users' roles. */
  async search(q: AdminUserListQuery): Promise<CappedPageResult<UserRow>> {
    const page = { limit: q.page_size, offset: (q.page - 1) * q.page_size };
    const { rows, count } = await searchUsers(this.deps.db, { emailContains: q.email, isActive: q.is_active }, page);
    return cappedPageOf(rows, count, q.page, q.page_size);
  }

  /** Creates a user and queues the welcome e-mail in the same transaction. */
  async create(input: UserCreateBody): Promise<UserRow> {
    const { db, queue, hasher, userCache } = this.deps;
    assertPasswordLength(input.password);
    if (await findUserByEmail(db, input.email)) throw new AppError('EMAIL_EXISTS', 'Email already registered');
    const password_hash = await hasher.hash(input.password);
    const user = await orEmailExists('Email already registered', () =>
      db.transaction().execute(async (trx) => {
        const user = await insertUser(trx, { email: input.email, full_name: input.full_name, password_hash, is_admin: false });
        await queue.send(trx, 'user-welcome-email', { userId: user.id });
        return user;
      }),
    );
    userCache.evict(user.id); // the list's totals count the new user from this response on
    return user;
  }

  /**
   * PATCH semantics; flags only by an admin, never on their own account. One's own new e-mail stays unverified until its link
   * is used; v2 (`currentPasswordForEmail`) also asks for the password: a stolen access token alone cannot move the account.
   */
  async update(actor: UserRow, id: number, input: UserUpdateBody, opts: { currentPasswordForEmail?: boolean } = {}): Promise<UserRow> {
    const self = actor.id === id;
    if (!self && !actor.is_admin) throw new AppError('FORBIDDEN', 'Not enough permissions to update this user');
    const touchesFlags = input.is_active !== undefined || input.is_admin !== undefined;
    if (touchesFlags && !actor.is_admin) throw new AppError('FORBIDDEN', 'Only administrators can change is_active or is_admin');
    if (touchesFlags && self) throw new AppError('FORBIDDEN', 'Administrators cannot change is_active or is_admin on their own account');
    const current = await findUserById(this.deps.db, id);
    if (!current) throw userNotFound();
    const movesEmail = input.email !== undefined && input.email.toLowerCase() !== current.email.toLowerCase();
    if (movesEmail) {
      const other = await findUserByEmail(this.deps.db, input.email!);
      if (other && other.id !== id) throw new AppError('EMAIL_EXISTS', 'Email already in use');
    }
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
    return orEmailExists('Email already in use', () =>
      this.changing(id, async (trx) => {
        const updated = await updateUser(trx, id, patch);
        if (!updated) throw userNotFound();
        if (input.is_active === false) {
          // the access tokens end too, so a later reactivation does not revive them
          await cutOffSessions(trx, id, now);
          await this.endSessions(trx, id);
        }
        if (movesEmail) {
          // recorded in order: a revert undoes its change and every later one (decision 105)
          const changeId = await insertEmailChange(trx, { user_id: id, previous_email: current.email, new_email: updated.email, changed_at: now });
          if (self) await this.deps.queue.send(trx, 'user-email-verification', { userId: id, email: updated.email, changeId });
          // the previous address hears of it: whoever changed it may not be the account's holder
          await this.deps.queue.send(trx, 'user-email-changed', {
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
  }

  private async assertCurrentPassword(user: UserRow, password: string | undefined): Promise<void> {
    if (password === undefined) throw invalidBodyField('current_password', 'required to change your own e-mail address', 'missing');
    if (!(await this.deps.hasher.verify(password, user.password_hash))) throw new AppError('INVALID_CREDENTIALS', 'Current password is incorrect');
  }

  /** Verifies the address while the account has it (else false); `within` runs first, under the row lock. */
  async confirmEmail(userId: number, email: string, within: (trx: Transaction<Database>) => Promise<void>): Promise<boolean> {
    return orEmailExists('Email already in use by another account', () =>
      this.changing(userId, async (trx) => {
        const current = await lockUser(trx, userId);
        if (!current || current.email.toLowerCase() !== email.toLowerCase()) return false;
        await within(trx);
        return (await setUserEmail(trx, userId, { email, at: new Date(), onlyIf: email })) !== undefined;
      }),
    );
  }

  /** Undoes an e-mail change (decision 105): the previous address returns verified; sessions and password (maybe the changer's) end. `within` runs first, under the row lock. */
  async restoreEmail(userId: number, email: string, within: (trx: Transaction<Database>) => Promise<void>): Promise<string | undefined> {
    return orEmailExists('Email already in use by another account', () =>
      this.changing(userId, async (trx) => {
        const current = await lockUser(trx, userId);
        if (!current) return undefined;
        await within(trx);
        const at = new Date();
        if (!(await setUserEmail(trx, userId, { email, at, revert: true }))) return undefined;
        await this.endSessions(trx, userId);
        await this.deps.queue.send(trx, 'user-email-reverted', { userId, restored: email, replaced: current.email, at: at.toISOString() });
        return current.email;
      }),
    );
  }

  /** Soft delete: the row stays, deleted and inactive; its sessions end. Never the caller's own account. */
  async remove(actor: UserRow, id: number): Promise<void> {
    if (actor.id === id) throw new AppError('FORBIDDEN', 'Administrators cannot delete their own account');
    await this.changing(id, async (trx) => {
      const now = new Date();
      const deleted = await updateUser(trx, id, { deleted_at: now, is_active: false, updated_at: now });
      if (!deleted) throw userNotFound();
      await this.endSessions(trx, id);
    });
  }

  /** A new password; every session ends. `within` runs first in the transaction (a reset token is consumed there). */
  async setPassword(
    userId: number,
    newPassword: string,
    opts: { within?: (trx: Transaction<Database>) => Promise<void>; verifiesEmail?: boolean } = {},
  ): Promise<UserRow> {
    assertPasswordLength(newPassword, 'new_password');
    const password_hash = await this.deps.hasher.hash(newPassword);
    return this.changing(userId, async (trx) => {
      await opts.within?.(trx);
      const updated = await setUserPassword(trx, userId, { password_hash, at: new Date(), verifiesEmail: opts.verifiesEmail ?? false });
      if (!updated) throw userNotFound();
      await this.endSessions(trx, userId);
      return updated;
    });
  }

  /** Signs the user out everywhere: every refresh token revoked, every access token issued until now refused. */
  async endAllSessions(userId: number): Promise<void> {
    await this.changing(userId, async (trx) => {
      if (!(await cutOffSessions(trx, userId, new Date()))) throw userNotFound();
      await this.endSessions(trx, userId);
    });
  }

  /** The customer of a platform order (see findPlatformCustomer), else a new one awaiting a password set through recovery. */
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
