import { activeUserIds } from '../users/users.repository.ts';
import type { Db } from '../../db/database.ts';

export async function insertRefreshToken(db: Db, row: { jti: string; user_id: number; expires_at: Date }): Promise<void> {
  await db.insertInto('refresh_tokens').values(row).execute();
}

/** The live (not revoked, not expired) refresh token with this id, of a live and active user. */
export async function findLiveRefreshToken(db: Db, jti: string): Promise<{ jti: string; user_id: number } | undefined> {
  return db
    .selectFrom('refresh_tokens')
    .select(['jti', 'user_id'])
    .where('jti', '=', jti)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', new Date())
    .where('user_id', 'in', activeUserIds(db))
    .executeTakeFirst();
}

/** Revokes the user's live refresh token `jti`, or every one (in the transaction that ends the user's sessions). */
export async function revokeRefreshTokens(db: Db, userId: number, jti?: string): Promise<void> {
  let query = db.updateTable('refresh_tokens').set({ revoked_at: new Date() }).where('user_id', '=', userId).where('revoked_at', 'is', null);
  if (jti !== undefined) query = query.where('jti', '=', jti);
  await query.execute();
}

/** Deletes tokens that expired (or were revoked) more than a day ago; returns how many. */
export async function purgeExpiredRefreshTokens(db: Db): Promise<number> {
  const cutoff = new Date(Date.now() - 24 * 3600 * 1000);
  const res = await db
    .deleteFrom('refresh_tokens')
    .where((eb) => eb.or([eb('expires_at', '<', cutoff), eb('revoked_at', '<', cutoff)]))
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}
