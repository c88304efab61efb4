import type { Transaction } from 'kysely';
import type { Db } from './database.ts';
import type { Database } from './schema.ts';

/**
 * SQLSTATEs after which PostgreSQL has rolled the whole transaction back and running it again can
 * succeed: deadlock_detected and serialization_failure. The order counters (kept by triggers, each a
 * row per status and slot or per user) are taken in statement order, so a request's insert and a
 * worker's batch of status changes can each hold one the other needs; PostgreSQL ends one of them.
 */
const RETRYABLE = new Set(['40P01', '40001']);
const ATTEMPTS = 3;

/**
 * `db.transaction().execute(work)`, run again (up to three times in all) when PostgreSQL ended it
 * as a deadlock victim or a serialization failure. `work` must keep its effects inside `trx`.
 */
export async function inTransaction<T>(db: Db, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction().execute(work);
    } catch (err) {
      const code = (err as { code?: unknown } | undefined)?.code;
      if (attempt >= ATTEMPTS || typeof code !== 'string' || !RETRYABLE.has(code)) throw err;
    }
  }
}
