import { sql } from 'kysely';
import { countCapped, type CappedCount } from '../../db/capped-count.ts';
import type { Db } from '../../db/database.ts';
import type { UserRow } from '../../db/schema.ts';

export interface UserSearch {
  /** a part of the e-mail, compared in lower case */
  emailContains?: string;
  isActive?: boolean;
}

/**
 * A page of live users matching `f`, ordered by id, and how many match, counted up to a cap
 * (countCapped). The e-mail is matched by position, not LIKE, so `%` and `_` in the search text are
 * plain characters.
 */
export async function searchUsers(db: Db, f: UserSearch, page: { limit: number; offset: number }): Promise<{ rows: UserRow[]; count: CappedCount }> {
  let q = db.selectFrom('users').where('deleted_at', 'is', null);
  if (f.emailContains !== undefined) q = q.where(sql<number>`strpos(lower(email), ${f.emailContains.toLowerCase()})`, '>', 0);
  if (f.isActive !== undefined) q = q.where('is_active', '=', f.isActive);
  const [rows, count] = await Promise.all([
    q.selectAll().orderBy('id', 'asc').limit(page.limit).offset(page.offset).execute(),
    countCapped(db, q, page.offset + page.limit),
  ]);
  return { rows, count };
}
