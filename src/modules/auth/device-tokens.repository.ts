import type { Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';

export async function insertDeviceToken(db: Db, row: { user_id: number; token_hash: string; expires_at: Date }): Promise<void> {
  await db.insertInto('device_tokens').values(row).execute();
}

/** The unexpired device token with this hash. */
export async function findLiveDeviceToken(db: Db, tokenHash: string): Promise<{ id: number; user_id: number } | undefined> {
  return db
    .selectFrom('device_tokens')
    .select(['id', 'user_id'])
    .where('token_hash', '=', tokenHash)
    .where('expires_at', '>', new Date())
    .executeTakeFirst();
}

/** A device that signed in again keeps its token for another lifetime. */
export async function renewDeviceToken(db: Db, id: number, expiresAt: Date): Promise<void> {
  await db.updateTable('device_tokens').set({ expires_at: expiresAt }).where('id', '=', id).execute();
}

/** Keeps the user's `keep` newest device tokens: a script signing in without one adds a row each time. */
export async function trimDeviceTokens(db: Db, userId: number, keep: number): Promise<void> {
  const newest = db.selectFrom('device_tokens').select('id').where('user_id', '=', userId).orderBy('id', 'desc').limit(keep);
  await db.deleteFrom('device_tokens').where('user_id', '=', userId).where('id', 'not in', newest).execute();
}

/** Deletes every device token of a user, in the transaction that ends the user's sessions. */
export async function deleteUserDeviceTokens(trx: Transaction<Database>, userId: number): Promise<void> {
  await trx.deleteFrom('device_tokens').where('user_id', '=', userId).execute();
}

/** Deletes expired device tokens; returns how many. */
export async function purgeExpiredDeviceTokens(db: Db): Promise<number> {
  const res = await db.deleteFrom('device_tokens').where('expires_at', '<', new Date()).executeTakeFirst();
  return Number(res.numDeletedRows);
}
