import type { Kysely } from 'kysely';
import { runDdl } from '../ddl.ts';

/**
 * Two user columns for signing in and out:
 * - `sessions_valid_after`: access tokens issued (`iat`) before it are refused. A password change, a
 *   password reset and signing out everywhere set it, and every API process sees it through the user
 *   cache, which the users trigger keeps current.
 * - `awaiting_password`: an account created without a password (a platform customer) that becomes
 *   active when its holder sets one through password recovery. The accounts that exist so far without
 *   a password are exactly those customers, inactive since their creation.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    ALTER TABLE users ADD COLUMN sessions_valid_after timestamptz;
    ALTER TABLE users ADD COLUMN awaiting_password boolean NOT NULL DEFAULT false;
    UPDATE users SET awaiting_password = true WHERE password_hash IS NULL AND is_active = false AND deleted_at IS NULL;
  `);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    ALTER TABLE users DROP COLUMN awaiting_password;
    ALTER TABLE users DROP COLUMN sessions_valid_after;
  `);
}
