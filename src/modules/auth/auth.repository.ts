import { sql, type Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database, UserRow } from '../../db/schema.ts';
import { activeUserIds } from '../users/users.repository.ts';

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

/** Deletes tokens that expired (or were revoked) before `cutoff`; returns how many. */
export async function purgeExpiredRefreshTokens(db: Db, cutoff: Date): Promise<number> {
  const res = await db
    .deleteFrom('refresh_tokens')
    .where((eb) => eb.or([eb('expires_at', '<', cutoff), eb('revoked_at', '<', cutoff)]))
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}

/** A reset token sent to the user's address, valid `ttlSeconds` from now; returns its id. */
export async function insertResetToken(db: Db, user: Pick<UserRow, 'id' | 'email'>, tokenHash: string, ttlSeconds: number): Promise<number> {
  const row = { user_id: user.id, token_hash: tokenHash, email: user.email, expires_at: new Date(Date.now() + ttlSeconds * 1000) };
  const inserted = await db.insertInto('password_reset_tokens').values(row).returning('id').executeTakeFirstOrThrow();
  return inserted.id;
}

/** Deletes a token whose e-mail could not be sent, so the job's retry issues (and sends) a new one. */
export async function deleteResetToken(db: Db, id: number): Promise<void> {
  await db.deleteFrom('password_reset_tokens').where('id', '=', id).execute();
}

/** The first key of the advisory locks of recovery requests; the second is the user's id. */
const RECOVERY_LOCKS = 4201;

/**
 * Whether the user has a token sent to `email` that can still be used; first takes the user's recovery lock until `trx` ends,
 * so one user's recovery requests are decided one at a time (two jobs would otherwise both send a token).
 */
export async function lockRecoveryHasUsableToken(trx: Transaction<Database>, userId: number, email: string): Promise<boolean> {
  await sql`SELECT pg_advisory_xact_lock(${RECOVERY_LOCKS}::int, ${userId}::int)`.execute(trx);
  const row = await trx
    .selectFrom('password_reset_tokens')
    .select('id')
    .where('user_id', '=', userId)
    .where(sql<string>`lower(email)`, '=', email.toLowerCase())
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', new Date())
    .executeTakeFirst();
  return row !== undefined;
}

export async function findResetToken(db: Db, tokenHash: string) {
  return db.selectFrom('password_reset_tokens').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

/** Marks the token used, in the password's transaction, if still usable; false when a concurrent reset got there first. */
export async function consumeResetToken(trx: Transaction<Database>, id: number, now: Date): Promise<boolean> {
  const res = await trx
    .updateTable('password_reset_tokens')
    .set({ used_at: now })
    .where('id', '=', id)
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** Revokes the user's unused reset tokens, in the transaction that ends the user's sessions. */
export async function revokeUserResetTokens(trx: Transaction<Database>, userId: number): Promise<void> {
  await trx
    .updateTable('password_reset_tokens')
    .set({ revoked_at: new Date() })
    .where('user_id', '=', userId)
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .execute();
}

/** Deletes tokens that expired before `cutoff` (used and revoked ones expire too); returns how many. */
export async function purgeExpiredResetTokens(db: Db, cutoff: Date): Promise<number> {
  const res = await db.deleteFrom('password_reset_tokens').where('expires_at', '<', cutoff).executeTakeFirst();
  return Number(res.numDeletedRows);
}
