import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';

/** Users whose counter rows one fold statement folds at most: each statement is its own short transaction. */
export const FOLD_BATCH = 1000;

/** How long one scheduled run may keep folding; what is left goes with the next run. */
const FOLD_BUDGET_MS = 30_000;

/**
 * Folds each user's `user_order_counts` delta rows (one or two per change of their orders) into one
 * row per status, `FOLD_BATCH` users per statement (the migration's `fold_user_order_counts`),
 * until none is left or the time budget is spent. Returns the users folded.
 */
export async function foldUserOrderCounts(db: Db, budgetMs = FOLD_BUDGET_MS): Promise<number> {
  const deadline = Date.now() + budgetMs;
  let total = 0;
  for (;;) {
    const { rows } = await sql<{ users: number }>`SELECT fold_user_order_counts(${FOLD_BATCH}) AS users`.execute(db);
    const users = rows[0]?.users ?? 0;
    total += users;
    if (users < FOLD_BATCH || Date.now() >= deadline) return total;
  }
}
