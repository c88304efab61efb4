import type { Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import type { EmailTokensTable } from './users.tables.ts';

type Purpose = EmailTokensTable['purpose'];

/** Records an e-mail change in its transaction; the id orders the account's changes. */
export async function insertEmailChange(
  trx: Db,
  row: { user_id: number; previous_email: string; new_email: string; changed_at: Date },
): Promise<number> {
  const inserted = await trx.insertInto('email_changes').values(row).returning('id').executeTakeFirstOrThrow();
  return inserted.id;
}

export async function insertEmailToken(
  db: Db,
  row: { user_id: number; purpose: Purpose; token_hash: string; email: string; expires_at: Date; change_id: number | null },
): Promise<void> {
  await db.insertInto('email_tokens').values(row).execute();
}

/** The token with this hash and purpose, with whether its change was undone since. */
export async function findEmailToken(db: Db, purpose: Purpose, tokenHash: string) {
  return db
    .selectFrom('email_tokens as t')
    .leftJoin('email_changes as c', 'c.id', 't.change_id')
    .selectAll('t')
    .select('c.undone_at')
    .where('t.purpose', '=', purpose)
    .where('t.token_hash', '=', tokenHash)
    .executeTakeFirst();
}

/** Whether the change is still in effect (not undone). Read under the user's row lock. */
export async function isChangeInEffect(trx: Transaction<Database>, changeId: number): Promise<boolean> {
  const row = await trx.selectFrom('email_changes').select('undone_at').where('id', '=', changeId).executeTakeFirst();
  return row !== undefined && row.undone_at === null;
}

/** Undoes the change `changeId` and every later one still in effect, never an earlier one; false when it was undone before. */
export async function undoChangesFrom(trx: Transaction<Database>, userId: number, changeId: number, now: Date): Promise<boolean> {
  const undone = await trx
    .updateTable('email_changes')
    .set({ undone_at: now })
    .where('user_id', '=', userId)
    .where('id', '>=', changeId)
    .where('undone_at', 'is', null)
    .returning('id')
    .execute();
  return undone.some((row) => row.id === changeId);
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

/** Voids the user's unused confirmation links of no recorded change (earlier releases): a revert may have taken their address. */
export async function voidUnlinkedVerifyTokens(trx: Transaction<Database>, userId: number, now: Date): Promise<void> {
  await trx
    .updateTable('email_tokens')
    .set({ used_at: now })
    .where('user_id', '=', userId)
    .where('purpose', '=', 'verify')
    .where('change_id', 'is', null)
    .where('used_at', 'is', null)
    .execute();
}

/** Deletes tokens that expired before `cutoff`; returns how many. */
export async function purgeExpiredEmailTokens(db: Db, cutoff: Date): Promise<number> {
  const res = await db.deleteFrom('email_tokens').where('expires_at', '<', cutoff).executeTakeFirst();
  return Number(res.numDeletedRows);
}

/**
 * Deletes changes made before `cutoff` that no token names any more: a revert only ever starts from a
 * token, so such a change can neither be reverted nor be undone by an earlier one's revert.
 */
export async function purgeSettledEmailChanges(db: Db, cutoff: Date): Promise<number> {
  const res = await db
    .deleteFrom('email_changes as c')
    .where('c.changed_at', '<', cutoff)
    .where(({ not, exists, selectFrom }) => not(exists(selectFrom('email_tokens as t').select('t.id').whereRef('t.change_id', '=', 'c.id'))))
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}
