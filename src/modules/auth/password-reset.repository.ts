import { sql, type ExpressionBuilder, type Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database, PasswordResetTokenRow, PasswordResetTokensTable } from '../../db/schema.ts';

export async function insertResetToken(
  db: Db,
  row: { user_id: number; token_hash: string; email: string; expires_at: Date },
): Promise<void> {
  await db.insertInto('password_reset_tokens').values(row).execute();
}

/** A newer token of the same user as token `t`: it supersedes `t`. */
function newerTokenOfTheUser(eb: ExpressionBuilder<Database & { t: PasswordResetTokensTable }, 't'>) {
  return eb
    .selectFrom('password_reset_tokens as n')
    .select(sql.lit(1).as('one'))
    .whereRef('n.user_id', '=', 't.user_id')
    .whereRef('n.id', '>', 't.id');
}

/** The token with this hash, and whether a newer token of the same user exists (which supersedes it). */
export async function findResetToken(db: Db, tokenHash: string): Promise<(PasswordResetTokenRow & { superseded: boolean }) | undefined> {
  const row = await db
    .selectFrom('password_reset_tokens as t')
    .selectAll('t')
    .select((eb) => eb.exists(newerTokenOfTheUser(eb)).as('superseded'))
    .where('t.token_hash', '=', tokenHash)
    .executeTakeFirst();
  return row && { ...row, superseded: Boolean(row.superseded) };
}

/**
 * Marks the token used, in the transaction that sets the new password, if it is still usable: not
 * used, revoked, expired or superseded. False when a concurrent reset (or request) got there first.
 */
export async function consumeResetToken(trx: Transaction<Database>, id: number, now: Date): Promise<boolean> {
  const res = await trx
    .updateTable('password_reset_tokens as t')
    .set({ used_at: now })
    .where('t.id', '=', id)
    .where('t.used_at', 'is', null)
    .where('t.revoked_at', 'is', null)
    .where('t.expires_at', '>', now)
    .where((eb) => eb.not(eb.exists(newerTokenOfTheUser(eb))))
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
