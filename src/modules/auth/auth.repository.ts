import type { Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
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

export async function revokeRefreshToken(db: Db, jti: string, userId: number): Promise<boolean> {
  const res = await db
    .updateTable('refresh_tokens')
    .set({ revoked_at: new Date() })
    .where('jti', '=', jti)
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** Revokes every live refresh token of a user, in the transaction that ends the user's sessions. */
export async function revokeUserRefreshTokens(trx: Transaction<Database>, userId: number): Promise<void> {
  await trx
    .updateTable('refresh_tokens')
    .set({ revoked_at: new Date() })
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .execute();
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
