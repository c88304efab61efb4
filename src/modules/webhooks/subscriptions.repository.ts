import { sql, type Kysely, type Updateable } from 'kysely';
import type { Database, WebhookDeliveryRow, WebhookSubscriptionRow, WebhookSubscriptionsTable } from '../../db/schema.ts';

type Executor = Kysely<Database>;

export async function insertSubscription(
  db: Executor,
  values: { userId: number; url: string; events: string[]; description: string | null; secret: string },
): Promise<WebhookSubscriptionRow> {
  return db
    .insertInto('webhook_subscriptions')
    .values({ user_id: values.userId, url: values.url, events: values.events, description: values.description, secret: values.secret })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function findSubscription(db: Executor, id: number): Promise<WebhookSubscriptionRow | undefined> {
  return db.selectFrom('webhook_subscriptions').selectAll().where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst();
}

export async function listSubscriptions(
  db: Executor,
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
  db: Executor,
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

/**
 * Active subscriptions that receive `type` for an order owned by `ownerId`: the owner's own, and
 * every administrator's. Owners that were deleted or deactivated receive nothing.
 */
export async function matchingSubscriptionIds(db: Executor, type: string, ownerId: number): Promise<number[]> {
  const rows = await db
    .selectFrom('webhook_subscriptions as s')
    .innerJoin('users as u', 'u.id', 's.user_id')
    .select('s.id')
    .where('s.is_active', '=', true)
    .where('s.deleted_at', 'is', null)
    .where('u.deleted_at', 'is', null)
    .where('u.is_active', '=', true)
    .where(sql<boolean>`${type} = ANY(s.events)`)
    .where((eb) => eb.or([eb('s.user_id', '=', ownerId), eb('u.is_admin', '=', true)]))
    .orderBy('s.id')
    .execute();
  return rows.map((r) => r.id);
}

/** A delivered message resets the run of failures. */
export async function resetSubscriptionFailures(db: Executor, id: number): Promise<void> {
  await db.updateTable('webhook_subscriptions').set({ consecutive_failures: 0 }).where('id', '=', id).where('consecutive_failures', '>', 0).execute();
}

/**
 * Counts one finally-failed message; the subscription is disabled once the run reaches `disableAfter`
 * (or at once when `disableReason` is given, e.g. the receiver answered 410 Gone).
 */
export async function recordSubscriptionFailure(
  db: Executor,
  id: number,
  opts: { disableAfter: number; disableReason?: string },
): Promise<void> {
  const longRun = `disabled after ${opts.disableAfter} consecutive failed messages`;
  await db
    .updateTable('webhook_subscriptions')
    .set((eb) => ({
      consecutive_failures: eb('consecutive_failures', '+', 1),
      is_active: opts.disableReason
        ? false
        : sql<boolean>`CASE WHEN consecutive_failures + 1 >= ${opts.disableAfter} THEN false ELSE is_active END`,
      disabled_reason: opts.disableReason
        ? opts.disableReason
        : sql<string | null>`CASE WHEN consecutive_failures + 1 >= ${opts.disableAfter} AND is_active THEN ${longRun} ELSE disabled_reason END`,
      updated_at: new Date(),
    }))
    .where('id', '=', id)
    .execute();
}

export async function listDeliveries(
  db: Executor,
  opts: { subscriptionId: number; limit: number; offset: number },
): Promise<{ rows: WebhookDeliveryRow[]; total: number }> {
  const base = db.selectFrom('webhook_deliveries').where('subscription_id', '=', opts.subscriptionId);
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('id', 'desc').limit(opts.limit).offset(opts.offset).execute(),
    base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.total) };
}
