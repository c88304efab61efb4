import { sql, type Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import type { PasswordResetTokenRow } from './auth.tables.ts';

export async function insertResetToken(
  db: Db,
  row: { user_id: number; token_hash: string; email: string; expires_at: Date },
): Promise<number> {
  const inserted = await db.insertInto('password_reset_tokens').values(row).returning('id').executeTakeFirstOrThrow();
  return inserted.id;
}

/** The first key of the advisory locks of recovery requests; the second is the user's id. */
const RECOVERY_LOCKS = 4201;

/** Decides one user's recovery requests one at a time until `trx` ends: two jobs would otherwise both send a token. */
export async function lockRecoveryOf(trx: Transaction<Database>, userId: number): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(${RECOVERY_LOCKS}::int, ${userId}::int)`.execute(trx);
}

/** Deletes a token whose e-mail could not be sent, so the job's retry issues (and sends) a new one. */
export async function deleteResetToken(db: Db, id: number): Promise<void> {
  await db.deleteFrom('password_reset_tokens').where('id', '=', id).execute();
}

/** Whether the user has a token sent to `email` that can still be used. */
export async function hasUsableResetToken(db: Db, userId: number, email: string, now: Date): Promise<boolean> {
  const row = await db
    .selectFrom('password_reset_tokens')
    .select('id')
    .where('user_id', '=', userId)
    .where(sql<string>`lower(email)`, '=', email.toLowerCase())
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return row !== undefined;
}

export async function findResetToken(db: Db, tokenHash: string): Promise<PasswordResetTokenRow | undefined> {
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

/** Deletes tokens that expired more than a day ago (used and revoked ones expire too); returns how many. */
export async function purgeExpiredResetTokens(db: Db): Promise<number> {
  const cutoff = new Date(Date.now() - 24 * 3600 * 1000);
  const res = await db.deleteFrom('password_reset_tokens').where('expires_at', '<', cutoff).executeTakeFirst();
  return Number(res.numDeletedRows);
}
