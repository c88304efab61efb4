import type { Db } from '../../db/database.ts';
import type { UserRow } from '../../db/schema.ts';
import { cappedPageOf, type CappedPageResult } from '../../http/common.schemas.ts';
import { searchUsers } from './users.admin.repository.ts';
import type { AdminUserListQuery } from './users.admin.schemas.ts';

/** The administrators' view of the users: a search by e-mail, with their roles. */
export class UsersAdminService {
  private readonly db: Db;

  constructor(deps: { db: Db }) {
    this.db = deps.db;
  }

  async list(q: AdminUserListQuery): Promise<CappedPageResult<UserRow>> {
    const { rows, count } = await searchUsers(
      this.db,
      { emailContains: q.email, isActive: q.is_active },
      { limit: q.page_size, offset: (q.page - 1) * q.page_size },
    );
    return cappedPageOf(rows, count, q.page, q.page_size);
  }
}
