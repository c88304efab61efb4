import { sql, type Insertable, type RawBuilder, type Transaction, type UpdateObject } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { WebhookSubscriptionRow, WebhookSubscriptionsTable } from './outbound-webhooks.tables.ts';
import { eventRecipients } from '../users/users.repository.ts';
import type { Db } from '../../db/database.ts';
import type { PageParams } from './messages.repository.ts';

export async function insertSubscription(db: Db, values: Insertable<WebhookSubscriptionsTable>): Promise<WebhookSubscriptionRow> {
  return db.insertInto('webhook_subscriptions').values(values).returningAll().executeTakeFirstOrThrow();
}

/** The first key of the per-user advisory lock; lane locks use subscription ids (positive) there. */
const USER_SUBSCRIPTIONS_LOCK = -16;

/**
 * The user's live (not deleted) subscriptions, enabled or not, which the limit and the duplicate check count; first takes the
 * user's lock until `trx` ends, so one user's creations and URL changes are decided one at a time and both checks hold.
 */
export async function lockSubscriptionUrls(trx: Transaction<Database>, userId: number): Promise<{ id: number; url: string }[]> {
  await sql`SELECT pg_advisory_xact_lock(${USER_SUBSCRIPTIONS_LOCK}::int, ${userId}::int)`.execute(trx);
  return trx.selectFrom('webhook_subscriptions').select(['id', 'url']).where('user_id', '=', userId).where('deleted_at', 'is', null).orderBy('id').execute();
}

export async function findSubscription(db: Db, id: number): Promise<WebhookSubscriptionRow | undefined> {
  return db.selectFrom('webhook_subscriptions').selectAll().where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst();
}

export async function listSubscriptions(db: Db, userId: number, q: PageParams): Promise<{ rows: WebhookSubscriptionRow[]; total: number }> {
  const base = db.selectFrom('webhook_subscriptions').where('user_id', '=', userId).where('deleted_at', 'is', null);
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('id', 'asc').limit(q.page_size).offset((q.page - 1) * q.page_size).execute(),
    base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.total) };
}

export async function updateSubscription(
  db: Db,
  id: number,
  patch: UpdateObject<Database, 'webhook_subscriptions'>,
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
export function rotateSubscriptionSecret(db: Db, id: number, secret: string, previousUntil: Date | null): Promise<WebhookSubscriptionRow | undefined> {
  return updateSubscription(db, id, {
    secret,
    previous_secret: previousUntil ? sql.ref<string>('secret') : null,
    previous_secret_expires_at: previousUntil,
    updated_at: new Date(),
  });
}

/** Active subscriptions for orders of `owners` (a subquery): the owners' own (if active) and every administrator's (`all_orders`). */
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

/** The row locked FOR NO KEY UPDATE (first in the lock order, docs/architecture.md): a message or attempt inserted meanwhile (its FK's share lock) does not wait. */
export async function lockSubscription(trx: Transaction<Database>, id: number) {
  return trx
    .selectFrom('webhook_subscriptions')
    .select(['is_active', 'consecutive_failures', 'deleted_at'])
    .where('id', '=', id)
    .forNoKeyUpdate()
    .executeTakeFirst();
}

/** Counts a finally-failed message, disabling at `disableAfter` (or at once with `disableReason`); true when this call disabled it. */
export async function recordSubscriptionFailure(trx: Transaction<Database>, id: number, disableAfter: number, disableReason?: string): Promise<boolean> {
  const current = await lockSubscription(trx, id);
  if (!current) return false;
  const failures = current.consecutive_failures + 1;
  const reason = disableReason ?? (failures >= disableAfter ? `disabled after ${disableAfter} consecutive failed messages` : undefined);
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
  return disabling;
}
