import type { Kysely } from 'kysely';
import { runDdl } from '../ddl.ts';

/**
 * Verified e-mail addresses (issue 44, decision 101):
 * - `users.email_verified`: the holder proved the address (an administrator created or changed it,
 *   a confirmation link or a password reset went through it). Accounts so far, and new ones
 *   unless said otherwise, count as verified; platform customers, whose address nobody has proved
 *   yet, and self-service changes are written unverified.
 * - An address is unique among live users that hold it verified: an unverified claim (a
 *   self-service change) does not stop the platform from giving the address's shopper a customer
 *   of their own. The service still refuses a change to an address any live user holds, and an
 *   address has one platform customer (no password, unverified): concurrent platform orders for a
 *   new address create one, the other's insert fails and links it.
 * - `email_tokens`: the confirmation link sent to a new address (`verify`) and the revert link
 *   sent to the previous one (`revert`), stored as SHA-256 only.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    ALTER TABLE users ADD COLUMN email_verified boolean NOT NULL DEFAULT true;
    UPDATE users SET email_verified = false WHERE awaiting_password;
    DROP INDEX users_email_live_key;
    CREATE UNIQUE INDEX users_email_verified_key ON users (lower(email)) WHERE deleted_at IS NULL AND email_verified;
    CREATE UNIQUE INDEX users_email_platform_customer_key ON users (lower(email)) WHERE deleted_at IS NULL AND NOT email_verified AND password_hash IS NULL;
    CREATE INDEX users_email_live_idx ON users (lower(email)) WHERE deleted_at IS NULL;
    CREATE TABLE email_tokens (
      id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      user_id integer NOT NULL REFERENCES users (id),
      purpose text NOT NULL CHECK (purpose IN ('verify', 'revert')),
      token_hash text NOT NULL,
      email text NOT NULL,
      expires_at timestamptz NOT NULL,
      used_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE UNIQUE INDEX email_tokens_hash_key ON email_tokens (token_hash);
    CREATE INDEX email_tokens_user_idx ON email_tokens (user_id);
    CREATE INDEX email_tokens_expires_idx ON email_tokens (expires_at);
  `);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    DROP TABLE email_tokens;
    DROP INDEX users_email_live_idx;
    DROP INDEX users_email_platform_customer_key;
    DROP INDEX users_email_verified_key;
    CREATE UNIQUE INDEX users_email_live_key ON users (lower(email)) WHERE deleted_at IS NULL;
    ALTER TABLE users DROP COLUMN email_verified;
  `);
}
