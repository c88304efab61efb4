import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database, NewUser, UserRow, UserUpdate } from '../../db/schema.ts';
import type { Kysely } from 'kysely';

type Executor = Kysely<Database>;

export async function findUserById(db: Executor, id: number): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst();
}

export async function findUserByEmail(db: Executor, email: string): Promise<UserRow | undefined> {
  return db
    .selectFrom('users')
    .selectAll()
    .where(sql<string>`lower(email)`, '=', email.toLowerCase())
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

export async function insertUser(db: Executor, user: NewUser): Promise<UserRow> {
  return db.insertInto('users').values(user).returningAll().executeTakeFirstOrThrow();
}

export async function updateUser(db: Executor, id: number, patch: UserUpdate): Promise<UserRow | undefined> {
  return db
    .updateTable('users')
    .set(patch)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

export async function listUsers(
  db: Db,
  opts: { limit: number; offset: number; isActive: boolean | undefined },
): Promise<{ rows: UserRow[]; total: number }> {
  let base = db.selectFrom('users').where('deleted_at', 'is', null);
  let counts = db.selectFrom('user_counts');
  if (opts.isActive !== undefined) {
    base = base.where('is_active', '=', opts.isActive);
    counts = counts.where('is_active', '=', opts.isActive);
  }
  // the total comes from the trigger-maintained counter: constant time however many users exist
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('id', 'asc').limit(opts.limit).offset(opts.offset).execute(),
    counts.select((eb) => eb.fn.coalesce(eb.fn.sum<number>('total'), eb.lit(0)).as('total')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.total) };
}

export async function anyAdminExists(db: Executor): Promise<boolean> {
  const row = await db
    .selectFrom('users')
    .select('id')
    .where('is_admin', '=', true)
    .where('deleted_at', 'is', null)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}
