import { sql, type Kysely } from 'kysely';

/**
 * `order_events` is the outbox of the order-event listeners (decision 017): every event is written
 * `published = false` by the order's own statement, and the publishing job hands it to the
 * listeners after the change committed, then sets it true in the same transaction as what the
 * listeners wrote. The events written before this migration were handed to their listeners inside
 * their own transaction: they read `true` (the column's first default, which PostgreSQL keeps for
 * existing rows without rewriting the table); new rows take the second default, `false`.
 *
 * `order_events_unpublished_idx` holds only the events not yet handed over: the job's read scans
 * that small index in id order, however many events there are.
 *
 * `traceparent` is the W3C trace context active when the event was written (null untraced): the
 * listeners run later in the publishing job's own trace, and continue the event's with it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE order_events ADD COLUMN published boolean NOT NULL DEFAULT true`.execute(db);
  await sql`ALTER TABLE order_events ALTER COLUMN published SET DEFAULT false`.execute(db);
  await sql`CREATE INDEX order_events_unpublished_idx ON order_events (id) WHERE NOT published`.execute(db);
  await sql`ALTER TABLE order_events ADD COLUMN traceparent text`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE order_events DROP COLUMN traceparent`.execute(db);
  await sql`DROP INDEX order_events_unpublished_idx`.execute(db);
  await sql`ALTER TABLE order_events DROP COLUMN published`.execute(db);
}
