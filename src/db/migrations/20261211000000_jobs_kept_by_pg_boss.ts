import { sql, type Kysely } from 'kysely';

/**
 * pg-boss deletes finished jobs itself (each queue's `deleteAfterSeconds`), and the job metrics
 * are pg-boss's own counts: the service no longer deletes from pg-boss's job table, and drops what
 * it had added for that. The count of failed jobs the service's purge had deleted goes, and so do
 * the two indexes it had built on pg-boss's job table (on a partitioned table, dropping the parent
 * index drops each partition's). A database pg-boss has not installed yet has neither.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE purged_job_counts`.execute(db);
  await sql`DROP INDEX IF EXISTS pgboss.oas_job_outcome_idx`.execute(db);
  await sql`DROP INDEX IF EXISTS pgboss.oas_job_finished_idx`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE purged_job_counts (queue text PRIMARY KEY, failed bigint NOT NULL DEFAULT 0)`.execute(db);
}
