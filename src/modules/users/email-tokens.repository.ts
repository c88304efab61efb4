import type { Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database, EmailTokensTable } from '../../db/schema.ts';

type Purpose = EmailTokensTable['purpose'];

export async function insertEmailToken(db: Db, row: { user_id: number; purpose: Purpose; token_hash: string; email: string; expires_at: Date }): Promise<void> {
  await db.insertInto('email_tokens').values(row).execute();
}

export async function findEmailToken(db: Db, purpose: Purpose, tokenHash: string) {
  return db.selectFrom('email_tokens').selectAll().where('purpose', '=', purpose).where('token_hash', '=', tokenHash).executeTakeFirst();
}

/** Marks the token used if it still is usable; false when a concurrent use got there first. */
export async function consumeEmailToken(trx: Transaction<Database>, id: number, now: Date): Promise<boolean> {
  const res = await trx
    .updateTable('email_tokens')
    .set({ used_at: now })
    .where('id', '=', id)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** Voids the user's unused confirmation links (an e-mail change was undone: the new address is gone). */
export async function voidVerifyTokens(trx: Transaction<Database>, userId: number, now: Date): Promise<void> {
  await trx
    .updateTable('email_tokens')
    .set({ used_at: now })
    .where('user_id', '=', userId)
    .where('purpose', '=', 'verify')
    .where('used_at', 'is', null)
    .execute();
}

/** Deletes tokens that expired more than a day ago; returns how many. */
export async function purgeExpiredEmailTokens(db: Db): Promise<number> {
  const cutoff = new Date(Date.now() - 24 * 3600 * 1000);
  const res = await db.deleteFrom('email_tokens').where('expires_at', '<', cutoff).executeTakeFirst();
  return Number(res.numDeletedRows);
}
