import type { Transaction } from 'kysely';
import type { Db } from './database.ts';
import { isRetryableConflict } from './errors.ts';
import type { Database } from './schema.ts';

/**
 * The order counters kept in locked rows (by status and slot, updated by triggers at commit) are
 * taken in the order of each transaction's changes, so two transactions committing at once
 * can each hold one the other needs; PostgreSQL ends one of them as a deadlock's victim.
 */
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
      if (attempt >= ATTEMPTS || !isRetryableConflict(err)) throw err;
    }
  }
}
