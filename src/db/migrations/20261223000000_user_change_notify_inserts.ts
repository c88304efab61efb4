import { sql, type Kysely } from 'kysely';

/**
 * `users_notify_changed` also fires on INSERT: each API process keeps the totals of `GET /users`
 * beside the user rows (src/http/user-cache.ts), and a user created in another process (a platform
 * customer made by the worker, a sign-up behind another API process) must drop them there too.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION users_notify_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('oas_user_changed', (CASE TG_OP WHEN 'INSERT' THEN NEW.id ELSE OLD.id END)::text);
      RETURN NULL;
    END $$
  `.execute(db);
  await sql`DROP TRIGGER users_notify_changed ON users`.execute(db);
  await sql`
    CREATE TRIGGER users_notify_changed AFTER INSERT OR UPDATE OR DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION users_notify_changed()
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER users_notify_changed ON users`.execute(db);
  await sql`
    CREATE OR REPLACE FUNCTION users_notify_changed() RETURNS trigger LANGUAGE plpgsql AS $$
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
