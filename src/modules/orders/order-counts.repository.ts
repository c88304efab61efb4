import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';

/** Users whose counter rows one fold statement folds at most: each statement is its own short transaction. */
export const FOLD_BATCH = 1000;

/**
 * Folds the `user_order_counts` delta rows (one or two per change of their orders) of at most
 * `maxUsers` users into one row per status, in one statement (the migration's
 * `fold_user_order_counts`). Returns the users folded.
 */
export async function foldUserOrderCounts(db: Db, maxUsers = FOLD_BATCH): Promise<number> {
  const { rows } = await sql<{ users: number }>`SELECT fold_user_order_counts(${maxUsers}) AS users`.execute(db);
  return rows[0]?.users ?? 0;
}
