import { sql, type Kysely } from 'kysely';

/**
 * Every API process keeps the user rows it authenticates with in memory (src/modules/users/user-cache.ts).
 * A change to a user made anywhere — another API process, an administrator's SQL — reaches every
 * process as a NOTIFY on `oas_user_changed` with the user id, sent when the changing transaction
 * commits. Inserts need none: a new user is not cached anywhere yet.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION users_notify_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('oas_user_changed', OLD.id::text);
      RETURN NULL;
    END $$
  `.execute(db);
  await sql`
    CREATE TRIGGER users_notify_changed AFTER UPDATE OR DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION users_notify_changed()
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER IF EXISTS users_notify_changed ON users`.execute(db);
  await sql`DROP FUNCTION IF EXISTS users_notify_changed()`.execute(db);
}
