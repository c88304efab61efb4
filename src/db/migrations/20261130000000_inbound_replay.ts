import { sql, type Kysely } from 'kysely';

/**
 * The platform's webhook id is not covered by its HMAC, so a captured signed body could be stored
 * again and again under new ids. Two more identities of a delivery: the platform's event id
 * (`X-Shopify-Event-Id`), unique when present, and the SHA-256 of the raw body, looked up within
 * the replay window (under a lock on the digest: see the repository). Rows received before this
 * migration have neither; both columns are nullable, so adding them rewrites no rows.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE inbound_webhooks ADD COLUMN event_id text, ADD COLUMN body_sha256 text`.execute(db);
  await sql`CREATE UNIQUE INDEX inbound_webhooks_event_id_key ON inbound_webhooks (event_id) WHERE event_id IS NOT NULL`.execute(db);
  await sql`CREATE INDEX inbound_webhooks_body_sha256_idx ON inbound_webhooks (body_sha256, received_at) WHERE body_sha256 IS NOT NULL`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS inbound_webhooks_body_sha256_idx`.execute(db);
  await sql`DROP INDEX IF EXISTS inbound_webhooks_event_id_key`.execute(db);
  await sql`ALTER TABLE inbound_webhooks DROP COLUMN body_sha256, DROP COLUMN event_id`.execute(db);
}
