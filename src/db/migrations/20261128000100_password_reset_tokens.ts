import type { Kysely } from 'kysely';
import { runDdl } from '../ddl.ts';

/**
 * Password reset tokens (auth module). Only the SHA-256 of a token is stored. A row stays after use,
 * expiry or revocation (until the daily purge), so a reset can say which of those happened; the
 * newest row of a user is the only one that can still be used (a newer request supersedes the older).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    CREATE TABLE password_reset_tokens (
      id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      user_id integer NOT NULL REFERENCES users (id),
      token_hash text NOT NULL,
      email text NOT NULL,
      expires_at timestamptz NOT NULL,
      used_at timestamptz,
      revoked_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE UNIQUE INDEX password_reset_tokens_hash_key ON password_reset_tokens (token_hash);
    CREATE INDEX password_reset_tokens_user_idx ON password_reset_tokens (user_id, id);
    CREATE INDEX password_reset_tokens_expires_idx ON password_reset_tokens (expires_at);
  `);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `DROP TABLE password_reset_tokens;`);
}
