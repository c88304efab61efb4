import { sql, type RawBuilder, type Transaction, type Updateable } from 'kysely';
import type { Database, WebhookSubscriptionRow, WebhookSubscriptionsTable } from '../../db/schema.ts';
import { eventRecipients } from '../users/users.repository.ts';
import type { Db } from '../../db/database.ts';

export async function insertSubscription(
  db: Db,
  values: { userId: number; url: string; events: string[]; description: string | null; secret: string; apiVersion: 'v1' | 'v2' },
): Promise<WebhookSubscriptionRow> {
  return db
    .insertInto('webhook_subscriptions')
    .values({
      user_id: values.userId,
      url: values.url,
      events: values.events,
      description: values.description,
      secret: values.secret,
      api_version: values.apiVersion,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The first key of the per-user advisory lock; lane locks use subscription ids (positive) there. */
const USER_SUBSCRIPTIONS_LOCK = -16;

/** Serialises one user's subscription creations and URL changes: the limit and duplicate check hold. */
export async function lockUserSubscriptions(trx: Transaction<Database>, userId: number): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(${USER_SUBSCRIPTIONS_LOCK}::int, ${userId}::int)`.execute(trx);
}

/** The user's live (not deleted) subscriptions, enabled or not: what the limit and the duplicate check count. */
export async function liveSubscriptionUrls(db: Db, userId: number): Promise<{ id: number; url: string }[]> {
  return db.selectFrom('webhook_subscriptions').select(['id', 'url']).where('user_id', '=', userId).where('deleted_at', 'is', null).orderBy('id').execute();
}

export async function findSubscription(db: Db, id: number): Promise<WebhookSubscriptionRow | undefined> {
  return db.selectFrom('webhook_subscriptions').selectAll().where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst();
}

export async function listSubscriptions(
  db: Db,
  opts: { userId: number; limit: number; offset: number },
): Promise<{ rows: WebhookSubscriptionRow[]; total: number }> {
  const base = db.selectFrom('webhook_subscriptions').where('user_id', '=', opts.userId).where('deleted_at', 'is', null);
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('id', 'asc').limit(opts.limit).offset(opts.offset).execute(),
    base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.total) };
}

export async function updateSubscription(
  db: Db,
  id: number,
  patch: Updateable<WebhookSubscriptionsTable>,
): Promise<WebhookSubscriptionRow | undefined> {
  return db
    .updateTable('webhook_subscriptions')
    .set(patch)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/** A new secret; the one replaced (read in the same statement) keeps signing until `previousUntil`, if given. */
export async function rotateSubscriptionSecret(
  db: Db,
  id: number,
  values: { secret: string; previousUntil: Date | null },
): Promise<WebhookSubscriptionRow | undefined> {
  return db
    .updateTable('webhook_subscriptions')
    .set((eb) => ({
      secret: values.secret,
      previous_secret: values.previousUntil ? eb.ref('secret') : null,
      previous_secret_expires_at: values.previousUntil,
      updated_at: new Date(),
    }))
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/** A subscription order events go to: its owner's orders', or every order's (an administrator's). */
export interface MatchingSubscription {
  id: number;
  url: string;
  events: string[];
  api_version: 'v1' | 'v2';
  user_id: number;
  all_orders: boolean;
}

/** Active subscriptions for orders of `owners` (a subquery): the owners' own (if active) and every administrator's. */
export function matchingSubscriptions(db: Db, owners: RawBuilder<unknown>) {
  return db
    .selectFrom('webhook_subscriptions as s')
    .innerJoin(eventRecipients(db, owners).as('r'), 'r.id', 's.user_id')
    .select(['s.id', 's.url', 's.events', 's.api_version', 's.user_id', 'r.is_admin as all_orders'])
    .where('s.is_active', '=', true)
    .where('s.deleted_at', 'is', null)
    .orderBy('s.id');
}

/** Those of `ids` still active, share-locked so none is disabled before the messages written for it commit. */
export async function lockActiveSubscriptions(trx: Transaction<Database>, ids: readonly number[]): Promise<Set<number>> {
  if (ids.length === 0) return new Set();
  const rows = await trx
    .selectFrom('webhook_subscriptions')
    .select('id')
    .where('id', 'in', [...ids])
    .where('is_active', '=', true)
    .where('deleted_at', 'is', null)
    .orderBy('id')
    .forShare()
    .execute();
  return new Set(rows.map((r) => r.id));
}

/** A delivered message resets the run of failures. */
export async function resetSubscriptionFailures(db: Db, id: number): Promise<void> {
  await db.updateTable('webhook_subscriptions').set({ consecutive_failures: 0 }).where('id', '=', id).where('consecutive_failures', '>', 0).execute();
}

/**
 * The subscription row, locked FOR NO KEY UPDATE (first in the lock order, docs/architecture.md), so
 * an attempt or message inserted meanwhile (a foreign key's share lock) does not wait for it.
 */
export async function lockSubscription(trx: Transaction<Database>, id: number) {
  return trx
    .selectFrom('webhook_subscriptions')
    .select(['is_active', 'consecutive_failures', 'deleted_at'])
    .where('id', '=', id)
    .forNoKeyUpdate()
    .executeTakeFirst();
}

/**
 * Counts one finally-failed message, disabling the subscription at `disableAfter` (or at once with
 * `disableReason`); `disabled` is true only when this call disabled an active one.
 */
export async function recordSubscriptionFailure(
  trx: Transaction<Database>,
  id: number,
  opts: { disableAfter: number; disableReason?: string },
): Promise<{ disabled: boolean }> {
  const current = await lockSubscription(trx, id);
  if (!current) return { disabled: false };
  const failures = current.consecutive_failures + 1;
  const reason = opts.disableReason ?? (failures >= opts.disableAfter ? `disabled after ${opts.disableAfter} consecutive failed messages` : undefined);
  const disabling = reason !== undefined && current.is_active && current.deleted_at === null;
  const now = new Date();
  await trx
    .updateTable('webhook_subscriptions')
    .set({
      consecutive_failures: failures,
      updated_at: now,
      ...(disabling ? { is_active: false, disabled_reason: reason, disabled_at: now } : {}),
    })
    .where('id', '=', id)
    .execute();
  return { disabled: disabling };
}
