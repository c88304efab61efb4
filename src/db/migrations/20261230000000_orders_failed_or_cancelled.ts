import type { Kysely } from 'kysely';
import { runDdl } from '../ddl.ts';

/**
 * API v1 reads a cancelled order as `failed`, so its `status=failed` filters on two statuses, and
 * PostgreSQL cannot read two ranges of `orders_status_created_idx` in time order: the administrators'
 * list scanned the time index through every order between, 50 per match at a million orders
 * (decision 158). This partial index holds those two statuses' orders, newest first; a query whose
 * `status IN ('failed', 'cancelled')` matches its predicate reads the page from it alone.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    CREATE INDEX orders_failed_cancelled_created_idx ON orders (created_at DESC, id DESC) WHERE status IN ('failed', 'cancelled');
  `);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    DROP INDEX orders_failed_cancelled_created_idx;
  `);
}
