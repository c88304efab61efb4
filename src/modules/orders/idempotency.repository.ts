import type { Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';

/** The responses stored under an `Idempotency-Key` of `POST /orders`, kept 24 h. */

export interface IdempotentResponse {
  request_hash: string;
  response_status: number;
  response_body: unknown;
}

export async function findIdempotencyKey(db: Db, userId: number, key: string): Promise<IdempotentResponse | undefined> {
  return db
    .selectFrom('idempotency_keys')
    .select(['request_hash', 'response_status', 'response_body'])
    .where('user_id', '=', userId)
    .where('key', '=', key)
    .where('expires_at', '>', new Date())
    .executeTakeFirst();
}

/**
 * Stores the response under the key, replacing an expired row. A live row makes this return false
 * (a concurrent duplicate waits here for the first transaction and then sees its row).
 */
export async function saveIdempotencyKey(
  trx: Transaction<Database>,
  row: { userId: number; key: string; requestHash: string; status: number; body: unknown; expiresAt: Date },
): Promise<boolean> {
  const response = {
    request_hash: row.requestHash,
    response_status: row.status,
    response_body: JSON.stringify(row.body),
    created_at: new Date(),
    expires_at: row.expiresAt,
  };
  const saved = await trx
    .insertInto('idempotency_keys')
    .values({ user_id: row.userId, key: row.key, ...response })
    .onConflict((oc) => oc.columns(['user_id', 'key']).doUpdateSet(response).where('idempotency_keys.expires_at', '<=', new Date()))
    .returning('key')
    .executeTakeFirst();
  return saved !== undefined;
}

export async function purgeExpiredIdempotencyKeys(db: Db): Promise<number> {
  const result = await db.deleteFrom('idempotency_keys').where('expires_at', '<=', new Date()).executeTakeFirst();
  return Number(result.numDeletedRows);
}
