import type { Kysely } from 'kysely';
import { runDdl } from '../ddl.ts';

/**
 * E-mail reverts that only give an account back to its owner (issue 54, decision 105), and session
 * cut-offs that cannot tie with a token's issue time:
 * - `email_changes`: every change of an account's address, in order (`id`). A revert undoes its
 *   change and every later one (`undone_at`); the revert and confirmation tokens of an undone change
 *   are void. `email_tokens.change_id` names the change a token belongs to.
 * - Unused revert tokens issued by earlier releases each get a change of their own, numbered as the
 *   tokens were (so the oldest is still the earliest change); earlier confirmation tokens keep no
 *   change, and any revert voids them.
 * - `users.sessions_generation`: every cut-off (password change or reset, signing out everywhere,
 *   deactivation, revert) adds one; tokens carry the generation they were issued in and are refused
 *   once it moved on. `sessions_valid_after` stays the time of the last cut-off, and still judges the
 *   tokens issued before this release (they carry no generation).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    CREATE TABLE email_changes (
      id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      user_id integer NOT NULL REFERENCES users (id),
      previous_email text NOT NULL,
      new_email text,
      changed_at timestamptz NOT NULL DEFAULT now(),
      undone_at timestamptz
    );
    CREATE INDEX email_changes_user_idx ON email_changes (user_id, id);
    ALTER TABLE email_tokens ADD COLUMN change_id integer REFERENCES email_changes (id);
    CREATE INDEX email_tokens_change_idx ON email_tokens (change_id);
    INSERT INTO email_changes (id, user_id, previous_email, changed_at)
      OVERRIDING SYSTEM VALUE
      SELECT id, user_id, email, created_at FROM email_tokens
      WHERE purpose = 'revert' AND used_at IS NULL AND expires_at > now();
    UPDATE email_tokens SET change_id = id WHERE purpose = 'revert' AND used_at IS NULL AND expires_at > now();
    SELECT setval(pg_get_serial_sequence('email_changes', 'id'), coalesce((SELECT max(id) FROM email_changes), 0) + 1, false);
    ALTER TABLE users ADD COLUMN sessions_generation integer NOT NULL DEFAULT 0;
  `);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    ALTER TABLE users DROP COLUMN sessions_generation;
    ALTER TABLE email_tokens DROP COLUMN change_id;
    DROP TABLE email_changes;
  `);
}
