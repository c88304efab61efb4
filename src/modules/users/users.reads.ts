import type { Db } from '../../db/database.ts';
import type { UserRow } from '../../db/schema.ts';
import { pageOf, type PageResult } from '../../http/common.schemas.ts';
import { AppError } from '../../http/errors.ts';
import type { UserCache } from '../../http/user-cache.ts';
import { countUsers, findUserById, listUsers } from './users.repository.ts';

export const userNotFound = () => new AppError('NOT_FOUND', 'User not found');

/** The users' routes' reads: one user, and the pages of the list with their totals. */
export class UserReads {
  private readonly db: Db;
  private readonly userCache: UserCache;

  constructor(deps: { db: Db; userCache: UserCache }) {
    this.db = deps.db;
    this.userCache = deps.userCache;
  }

  async get(id: number): Promise<UserRow> {
    const user = await findUserById(this.db, id);
    if (!user) throw userNotFound();
    return user;
  }

  async list(q: { page: number; page_size: number; is_active?: boolean }): Promise<PageResult<UserRow>> {
    const [rows, total] = await Promise.all([
      listUsers(this.db, { limit: q.page_size, offset: (q.page - 1) * q.page_size, isActive: q.is_active }),
      this.userCache.total(`is_active=${q.is_active}`, () => countUsers(this.db, q.is_active)),
    ]);
    return pageOf(rows, total, q.page, q.page_size);
  }

  /**
   * The users `actor` may read in API v2: every one for an administrator, else only their own
   * account (a page of it, or of none when `is_active` excludes it). v1 keeps the specification's
   * rule, `list`: any signed-in user lists every user.
   */
  async listVisibleTo(actor: UserRow, q: { page: number; page_size: number; is_active?: boolean }): Promise<PageResult<UserRow>> {
    if (actor.is_admin) return this.list(q);
    const self = await findUserById(this.db, actor.id);
    const own = self && (q.is_active === undefined || self.is_active === q.is_active) ? [self] : [];
    const offset = (q.page - 1) * q.page_size;
    return pageOf(own.slice(offset, offset + q.page_size), own.length, q.page, q.page_size);
  }

  /** A user `actor` may read in API v2: any for an administrator, else only their own (another is 404, as if absent). */
  async getVisibleTo(actor: UserRow, id: number): Promise<UserRow> {
    if (!actor.is_admin && actor.id !== id) throw userNotFound();
    return this.get(id);
  }
}
