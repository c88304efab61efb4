import { sql, type Expression, type RawBuilder } from 'kysely';
import { countCapped, type CappedCount } from '../../db/capped-count.ts';
import type { NewUser, UserRow, UserUpdate } from '../../db/schema.ts';
import type { Db } from '../../db/database.ts';

export async function findUserById(db: Db, id: number): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst();
}

function liveWithEmail(db: Db, email: string) {
  return db.selectFrom('users').selectAll().where(sql<string>`lower(email)`, '=', email.toLowerCase()).where('deleted_at', 'is', null);
}

/** The live user with this e-mail (any case); of claims sharing it (migration 20261214000000), the verified one, then one that can sign in, then the oldest. */
export async function findUserByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  return liveWithEmail(db, email)
    .orderBy('email_verified', 'desc')
    .orderBy(sql`password_hash IS NOT NULL`, 'desc')
    .orderBy('id', 'asc')
    .executeTakeFirst();
}

/** The owner of a platform order for this address: its verified holder, else an unclaimed platform customer (no password); never an unverified claim. */
export async function findPlatformCustomer(db: Db, email: string): Promise<UserRow | undefined> {
  return liveWithEmail(db, email)
    .where((eb) => eb.or([eb('email_verified', '=', true), eb('password_hash', 'is', null)]))
    .orderBy('email_verified', 'desc')
    .orderBy('id', 'asc')
    .executeTakeFirst();
}

/** The account that may recover its password here: active and verified, or a platform customer awaiting its first password. */
export async function findRecoverableByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  return liveWithEmail(db, email)
    .where((eb) => eb.or([eb.and([eb('email_verified', '=', true), eb('is_active', '=', true)]), eb('awaiting_password', '=', true)]))
    .orderBy('email_verified', 'desc')
    .orderBy('id', 'asc')
    .executeTakeFirst();
}

export async function insertUser(db: Db, user: NewUser): Promise<UserRow> {
  return db.insertInto('users').values(user).returningAll().executeTakeFirstOrThrow();
}

function updateLive(db: Db, id: number) {
  return db.updateTable('users').where('id', '=', id).where('deleted_at', 'is', null);
}

export async function updateUser(db: Db, id: number, patch: UserUpdate): Promise<UserRow | undefined> {
  return updateLive(db, id).set(patch).returningAll().executeTakeFirst();
}

/**
 * A session cut-off: the next generation refuses earlier tokens however close their issue time; the time, only moving forward
 * (clocks differ), judges the tokens of earlier releases, which carry no generation (issuedBeforeCutoff in http/auth.ts).
 */
function cutOff(at: Date) {
  return {
    sessions_generation: sql<number>`sessions_generation + 1`,
    sessions_valid_after: sql<Date>`greatest(sessions_valid_after, ${at})`,
  };
}

/** A new password for a live user: cuts off its sessions and activates an account awaiting its first password. */
export async function setUserPassword(db: Db, id: number, change: { password_hash: string; at: Date; verifiesEmail: boolean }): Promise<UserRow | undefined> {
  return updateLive(db, id)
    .set((eb) => ({
      ...(change.verifiesEmail ? { email_verified: true } : {}),
      password_hash: change.password_hash,
      password_changed_at: change.at,
      ...cutOff(change.at),
      updated_at: change.at,
      is_active: eb.or([eb.ref('is_active'), eb.ref('awaiting_password')]) as Expression<boolean>,
      awaiting_password: false,
    }))
    .returningAll()
    .executeTakeFirst();
}

/** The live user, its row locked until `trx` ends: changes of its e-mail are decided one at a time. */
export async function lockUser(trx: Db, id: number): Promise<UserRow | undefined> {
  return trx.selectFrom('users').selectAll().where('id', '=', id).where('deleted_at', 'is', null).forUpdate().executeTakeFirst();
}

/** Sets a live user's e-mail, verified; `revert` also cuts off its sessions and ends its password; `onlyIf`: while it has that address. */
export async function setUserEmail(
  db: Db,
  id: number,
  change: { email: string; at: Date; revert?: boolean; onlyIf?: string },
): Promise<UserRow | undefined> {
  let query = updateLive(db, id).set({
    email: change.email,
    email_verified: true,
    updated_at: change.at,
    ...(change.revert ? { ...cutOff(change.at), password_hash: null, password_changed_at: change.at } : {}),
  });
  if (change.onlyIf !== undefined) query = query.where(sql<string>`lower(email)`, '=', change.onlyIf.toLowerCase());
  return query.returningAll().executeTakeFirst();
}

/** Access tokens of the user issued before `cutoff` are refused from now on; false when there is no such live user. */
export async function cutOffSessions(db: Db, id: number, cutoff: Date): Promise<boolean> {
  const res = await updateLive(db, id).set(cutOff(cutoff)).executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

function liveUsers(db: Db, isActive?: boolean) {
  const live = db.selectFrom('users').where('deleted_at', 'is', null);
  return isActive === undefined ? live : live.where('is_active', '=', isActive);
}

/** A page of live users (or those active or not, with `isActive`), ordered by id. */
export async function listUsers(db: Db, opts: { limit: number; offset: number; isActive: boolean | undefined }): Promise<UserRow[]> {
  return liveUsers(db, opts.isActive).selectAll().orderBy('id', 'asc').limit(opts.limit).offset(opts.offset).execute();
}

/** How many live users there are (active or not, with `isActive`): users_list_idx or users_active_list_idx serves it. */
export async function countUsers(db: Db, isActive: boolean | undefined): Promise<number> {
  const row = await liveUsers(db, isActive).select((eb) => eb.fn.countAll<string>().as('total')).executeTakeFirstOrThrow();
  return Number(row.total);
}

/** A page of live users matching the search, and how many match up to a cap; strpos, not LIKE: `%` and `_` are plain text. */
export async function searchUsers(
  db: Db,
  f: { emailContains?: string; isActive?: boolean },
  page: { limit: number; offset: number },
): Promise<{ rows: UserRow[]; count: CappedCount }> {
  let q = liveUsers(db, f.isActive);
  if (f.emailContains !== undefined) q = q.where(sql<number>`strpos(lower(email), ${f.emailContains.toLowerCase()})`, '>', 0);
  const [rows, count] = await Promise.all([
    q.selectAll().orderBy('id', 'asc').limit(page.limit).offset(page.offset).execute(),
    countCapped(db, q, page.offset + page.limit),
  ]);
  return { rows, count };
}

export async function anyAdminExists(db: Db): Promise<boolean> {
  const row = await liveUsers(db).select('id').where('is_admin', '=', true).limit(1).executeTakeFirst();
  return row !== undefined;
}

/** The ids of live, active users: a subquery for the tables of other modules that must name only those. */
export function activeUserIds(db: Db) {
  return liveUsers(db, true).select('id');
}

/** The live, active users whose webhooks get the events of orders owned by `owners` (a subquery): those owners and every administrator. */
export function eventRecipients(db: Db, owners: RawBuilder<unknown>) {
  return liveUsers(db, true).select(['id', 'is_admin']).where(sql<boolean>`(id IN (${owners}) OR is_admin)`);
}
