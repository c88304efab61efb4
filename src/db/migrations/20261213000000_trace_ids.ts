import { sql, type Kysely } from 'kysely';

/**
 * Where an order's story can be found in a tracing back end: the trace id of the request (or job)
 * that created each order, and the `traceparent` of the span that wrote each outgoing message's
 * event, which every delivery attempt of the message continues. Null when tracing was off (or the
 * trace not sampled) then, and for rows written before.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE orders ADD COLUMN trace_id text`.execute(db);
  await sql`ALTER TABLE webhook_messages ADD COLUMN traceparent text`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE webhook_messages DROP COLUMN traceparent`.execute(db);
  await sql`ALTER TABLE orders DROP COLUMN trace_id`.execute(db);
}
