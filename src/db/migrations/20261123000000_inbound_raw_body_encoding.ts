import { sql, type Kysely } from 'kysely';

/**
 * Every correctly signed inbound webhook is stored, whatever its body: processing, not the
 * acknowledgement, decides whether it is a usable order. A body that PostgreSQL cannot hold as text
 * (not UTF-8, or with a NUL byte) is kept in base64, so the stored bytes are still the signed ones.
 * Adding a column with a constant default rewrites no rows.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE inbound_webhooks
      ADD COLUMN raw_body_encoding text NOT NULL DEFAULT 'utf8' CHECK (raw_body_encoding IN ('utf8', 'base64'))
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE inbound_webhooks DROP COLUMN raw_body_encoding`.execute(db);
}
