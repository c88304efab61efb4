import { sql, type Expression, type RawBuilder } from 'kysely';
import type { NewUser, UserRow, UserUpdate } from '../../db/schema.ts';
import type { Db } from '../../db/database.ts';

export async function findUserById(db: Db, id: number): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst();
}

function liveWithEmail(db: Db, email: string) {
  return db.selectFrom('users').selectAll().where(sql<string>`lower(email)`, '=', email.toLowerCase()).where('deleted_at', 'is', null);
}

/**
 * The live user with this e-mail (any case). An unverified claim may share the address with its
 * verified holder or a platform customer (see migration 20261214000000): the verified one comes
 * first, then one that can sign in, then the oldest.
 */
export async function findUserByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  return liveWithEmail(db, email)
    .orderBy('email_verified', 'desc')
    .orderBy(sql`password_hash IS NOT NULL`, 'desc')
    .orderBy('id', 'asc')
    .executeTakeFirst();
}

/**
 * The account a platform order for this address belongs to: its verified holder, else a platform
 * customer nobody has claimed yet (no password, not verified). An unverified self-service claim
 * never gets the shopper's order.
 */
export async function findPlatformCustomer(db: Db, email: string): Promise<UserRow | undefined> {
  return liveWithEmail(db, email)
    .where((eb) => eb.or([eb('email_verified', '=', true), eb('password_hash', 'is', null)]))
    .orderBy('email_verified', 'desc')
    .orderBy('id', 'asc')
    .executeTakeFirst();
}

/**
 * The account that may recover its password through this address: active with the address
 * verified, or a platform customer awaiting its first password (the order brought the address).
 */
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

export async function updateUser(db: Db, id: number, patch: UserUpdate): Promise<UserRow | undefined> {
  return db
    .updateTable('users')
    .set(patch)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/**
 * What a session cut-off writes: the next generation (tokens of earlier ones are refused, however
 * close their issue time), and its time, which only moves forward (processes' clocks may differ).
 */
function cutOff(at: Date) {
  return {
    sessions_generation: sql<number>`sessions_generation + 1`,
    sessions_valid_after: sql<Date>`greatest(sessions_valid_after, ${at})`,
  };
}

/**
 * A new password for a live user, which cuts off the sessions before `cutoff` and activates an
 * account that was awaiting its first password (an account deactivated otherwise stays inactive).
 */
export async function setUserPassword(
  db: Db,
  id: number,
  change: { password_hash: string; at: Date; cutoff: Date; verifiesEmail: boolean },
): Promise<UserRow | undefined> {
  return db
    .updateTable('users')
    .set((eb) => ({
      ...(change.verifiesEmail ? { email_verified: true } : {}),
      password_hash: change.password_hash,
      password_changed_at: change.at,
      ...cutOff(change.cutoff),
      updated_at: change.at,
      is_active: eb.or([eb.ref('is_active'), eb.ref('awaiting_password')]) as Expression<boolean>,
      awaiting_password: false,
    }))
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/** The live user, its row locked until `trx` ends: changes of its e-mail are decided one at a time. */
export async function lockUser(trx: Db, id: number): Promise<UserRow | undefined> {
  return trx.selectFrom('users').selectAll().where('id', '=', id).where('deleted_at', 'is', null).forUpdate().executeTakeFirst();
}

/**
 * Sets the e-mail of a live user, verified; with `revert` (an e-mail change undone) it also cuts off
 * its sessions and ends its password; with `onlyIf`, only while the account still has that address
 * (a confirmation link).
 */
export async function setUserEmail(
  db: Db,
  id: number,
  change: { email: string; at: Date; revert?: boolean; onlyIf?: string },
): Promise<UserRow | undefined> {
  let query = db
    .updateTable('users')
    .set({
      email: change.email,
      email_verified: true,
      updated_at: change.at,
      ...(change.revert ? { ...cutOff(change.at), password_hash: null, password_changed_at: change.at } : {}),
    })
    .where('id', '=', id)
    .where('deleted_at', 'is', null);
  if (change.onlyIf !== undefined) query = query.where(sql<string>`lower(email)`, '=', change.onlyIf.toLowerCase());
  return query.returningAll().executeTakeFirst();
}

/** Access tokens of the user issued before `cutoff` are refused from now on; false when there is no such live user. */
export async function cutOffSessions(db: Db, id: number, cutoff: Date): Promise<boolean> {
  const res = await db
    .updateTable('users')
    .set(cutOff(cutoff))
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
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

function liveUsers(db: Db, isActive: boolean | undefined) {
  const live = db.selectFrom('users').where('deleted_at', 'is', null);
  return isActive === undefined ? live : live.where('is_active', '=', isActive);
}

export async function anyAdminExists(db: Db): Promise<boolean> {
  const row = await db
    .selectFrom('users')
    .select('id')
    .where('is_admin', '=', true)
    .where('deleted_at', 'is', null)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** The ids of live, active users: a subquery for the tables of other modules that must name only those. */
export function activeUserIds(db: Db) {
  return db.selectFrom('users').select('id').where('deleted_at', 'is', null).where('is_active', '=', true);
}

/**
 * The users whose webhook subscriptions receive the events of orders owned by `owners` (a subquery
 * of user ids): the owners and every administrator, while live and active, with whether each is an
 * administrator (who receives every order's events). A subquery (one statement with the caller's).
 */
export function eventRecipients(db: Db, owners: RawBuilder<unknown>) {
  return db
    .selectFrom('users')
    .select(['id', 'is_admin'])
    .where('deleted_at', 'is', null)
    .where('is_active', '=', true)
    .where(sql<boolean>`(id IN (${owners}) OR is_admin)`);
}
