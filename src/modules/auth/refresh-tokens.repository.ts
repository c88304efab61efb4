import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';

type Executor = Kysely<Database>;

export async function insertRefreshToken(db: Executor, row: { jti: string; user_id: number; expires_at: Date }): Promise<void> {
  await db.insertInto('refresh_tokens').values(row).execute();
}

/** The live (not revoked, not expired) refresh token with this id, joined to its live user. */
export async function findLiveRefreshToken(db: Executor, jti: string) {
  return db
    .selectFrom('refresh_tokens as t')
    .innerJoin('users as u', 'u.id', 't.user_id')
    .select(['t.jti', 't.user_id', 'u.is_active'])
    .where('t.jti', '=', jti)
    .where('t.revoked_at', 'is', null)
    .where('t.expires_at', '>', new Date())
    .where('u.deleted_at', 'is', null)
    .executeTakeFirst();
}

export async function revokeRefreshToken(db: Executor, jti: string, userId: number): Promise<boolean> {
  const res = await db
    .updateTable('refresh_tokens')
    .set({ revoked_at: new Date() })
    .where('jti', '=', jti)
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

export async function revokeUserRefreshTokens(db: Executor, userId: number): Promise<void> {
  await db
    .updateTable('refresh_tokens')
    .set({ revoked_at: new Date() })
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .execute();
}

/** Deletes tokens that expired (or were revoked) more than a day ago; returns how many. */
export async function purgeExpiredRefreshTokens(db: Executor): Promise<number> {
  const cutoff = new Date(Date.now() - 24 * 3600 * 1000);
  const res = await db
    .deleteFrom('refresh_tokens')
    .where((eb) => eb.or([eb('expires_at', '<', cutoff), eb('revoked_at', '<', cutoff)]))
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}
