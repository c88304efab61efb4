import type { Kysely } from 'kysely';
import { runDdl } from '../ddl.ts';

/**
 * Device tokens (issue 54, decision 106): a successful sign-in gives the client a token for that
 * account, and a sign-in presenting it is throttled per device only, never by the account's
 * ceiling or by other clients' failures. Stored as SHA-256 only; each expires, and they end with
 * the account's sessions.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    CREATE TABLE device_tokens (
      id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      user_id integer NOT NULL REFERENCES users (id),
      token_hash text NOT NULL,
      expires_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE UNIQUE INDEX device_tokens_hash_key ON device_tokens (token_hash);
    CREATE INDEX device_tokens_user_idx ON device_tokens (user_id, id);
    CREATE INDEX device_tokens_expires_idx ON device_tokens (expires_at);
  `);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `DROP TABLE device_tokens;`);
}
