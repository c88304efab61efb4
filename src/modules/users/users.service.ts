import type { Db } from '../../db/database.ts';
import type { UserRow, UserUpdate } from '../../db/schema.ts';
import { AppError } from '../../http/errors.ts';
import { pageOf, type PageResult } from '../../http/common.schemas.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import { assertPasswordLength, type PasswordHasher } from '../auth/passwords.ts';
import { revokeUserRefreshTokens } from '../auth/refresh-tokens.repository.ts';
import { findUserByEmail, findUserById, insertUser, listUsers, updateUser } from './users.repository.ts';
import type { UserCreateBody, UserUpdateBody } from './users.schemas.ts';
import { WELCOME_EMAIL_QUEUE } from './users.jobs.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { UserCache } from './user-cache.ts';

const userNotFound = () => new AppError('NOT_FOUND', 'User not found');

export class UsersService {
  private readonly db: Db;
  private readonly queue: JobQueue;
  private readonly hasher: PasswordHasher;
  private readonly userCache: UserCache;

  constructor(deps: { db: Db; queue: JobQueue; hasher: PasswordHasher; userCache: UserCache }) {
    this.db = deps.db;
    this.queue = deps.queue;
    this.hasher = deps.hasher;
    this.userCache = deps.userCache;
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
  async create(input: UserCreateBody, opts: { isAdmin?: boolean; welcome?: boolean } = {}): Promise<UserRow> {
    assertPasswordLength(input.password);
    if (await findUserByEmail(this.db, input.email)) throw new AppError('EMAIL_EXISTS', 'Email already registered');
    const password_hash = await this.hasher.hash(input.password);
    try {
      return await this.db.transaction().execute(async (trx) => {
        const user = await insertUser(trx, {
          email: input.email,
          full_name: input.full_name,
          password_hash,
          is_admin: opts.isAdmin ?? false,
        });
        if (opts.welcome !== false) await this.queue.send(trx, WELCOME_EMAIL_QUEUE, { userId: user.id });
        return user;
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw new AppError('EMAIL_EXISTS', 'Email already registered');
      throw err;
    }
  }

  async get(id: number): Promise<UserRow> {
    const user = await findUserById(this.db, id);
    if (!user) throw userNotFound();
    return user;
  }

  async list(q: { page: number; page_size: number; is_active?: boolean }): Promise<PageResult<UserRow>> {
    const { rows, total } = await listUsers(this.db, {
      limit: q.page_size,
      offset: (q.page - 1) * q.page_size,
      isActive: q.is_active,
    });
    return pageOf(rows, total, q.page, q.page_size);
  }

  /** PATCH semantics: only the given fields change. Flags only by an admin, never on their own account. */
  async update(actor: UserRow, id: number, input: UserUpdateBody): Promise<UserRow> {
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
    const changes = Object.values(input).some((v) => v !== undefined);
    if (!changes) return current; // an empty PATCH changes nothing, not even updated_at
    const patch: UserUpdate = { updated_at: new Date() };
    if (input.full_name !== undefined) patch.full_name = input.full_name;
    if (input.email !== undefined) patch.email = input.email;
    if (input.is_active !== undefined) patch.is_active = input.is_active;
    if (input.is_admin !== undefined) patch.is_admin = input.is_admin;
    try {
      return await this.changing(id, () => this.db.transaction().execute(async (trx) => {
        const updated = await updateUser(trx, id, patch);
        if (!updated) throw userNotFound();
        if (input.is_active === false) await revokeUserRefreshTokens(trx, id);
        return updated;
      }));
    } catch (err) {
      if (isUniqueViolation(err)) throw new AppError('EMAIL_EXISTS', 'Email already in use');
      throw err;
    }
  }

  /**
   * Soft delete: the row stays, marked deleted and inactive; its refresh tokens are revoked. Like
   * deactivation, never on the caller's own account (an administrator cannot lock themselves out).
   */
  async remove(actor: UserRow, id: number): Promise<void> {
    if (actor.id === id) throw new AppError('FORBIDDEN', 'Administrators cannot delete their own account');
    await this.changing(id, () => this.db.transaction().execute(async (trx) => {
      const now = new Date();
      const deleted = await updateUser(trx, id, { deleted_at: now, is_active: false, updated_at: now });
      if (!deleted) throw userNotFound();
      await revokeUserRefreshTokens(trx, id);
    }));
  }

  async changePassword(user: UserRow, currentPassword: string, newPassword: string): Promise<void> {
    if (!(await this.hasher.verify(currentPassword, user.password_hash))) {
      throw new AppError('INVALID_CREDENTIALS', 'Current password is incorrect');
    }
    assertPasswordLength(newPassword, 'new_password');
    const password_hash = await this.hasher.hash(newPassword);
    await this.changing(user.id, () => this.db.transaction().execute(async (trx) => {
      const now = new Date();
      await updateUser(trx, user.id, { password_hash, password_changed_at: now, updated_at: now });
      await revokeUserRefreshTokens(trx, user.id);
    }));
  }
}
