import { sql, type Kysely } from 'kysely';
import type { Database, WebhookMessageRow, WebhookMessageStatus, WebhookSubscriptionRow } from '../../db/schema.ts';

type Executor = Kysely<Database>;

/**
 * Serialises the messages of one order to one subscription between the transaction that adds a
 * message and the one that settles the previous message (and releases the next). The two-key form
 * of the advisory lock never collides with pg-boss's single-key locks.
 */
export async function lockMessageLane(db: Executor, subscriptionId: number, orderId: number): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(${subscriptionId}::int, ${orderId}::int)`.execute(db);
}

/** True when an earlier message of the same lane is still waiting or in flight. */
export async function laneBusy(db: Executor, subscriptionId: number, orderId: number): Promise<boolean> {
  const row = await db
    .selectFrom('webhook_messages')
    .select('id')
    .where('subscription_id', '=', subscriptionId)
    .where('order_id', '=', orderId)
    .where('status', 'in', ['held', 'queued'])
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

export async function insertMessage(
  db: Executor,
  values: {
    messageId: string;
    subscriptionId: number;
    eventId: number | null;
    orderId: number | null;
    eventType: string;
    payload: string;
    status: Extract<WebhookMessageStatus, 'held' | 'queued'>;
  },
): Promise<WebhookMessageRow> {
  return db
    .insertInto('webhook_messages')
    .values({
      message_id: values.messageId,
      subscription_id: values.subscriptionId,
      event_id: values.eventId,
      order_id: values.orderId,
      event_type: values.eventType,
      payload: values.payload,
      status: values.status,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function findMessageWithSubscription(
  db: Executor,
  id: number,
): Promise<{ message: WebhookMessageRow; subscription: WebhookSubscriptionRow } | undefined> {
  const message = await db.selectFrom('webhook_messages').selectAll().where('id', '=', id).executeTakeFirst();
  if (!message) return undefined;
  const subscription = await db.selectFrom('webhook_subscriptions').selectAll().where('id', '=', message.subscription_id).executeTakeFirst();
  return subscription ? { message, subscription } : undefined;
}

/** Moves a queued message to its final state (only once: a repeated job finds it settled). */
export async function settleMessage(
  db: Executor,
  id: number,
  outcome: { status: 'delivered' | 'failed'; attempts: number; error: string | null },
): Promise<boolean> {
  const res = await db
    .updateTable('webhook_messages')
    .set({ status: outcome.status, attempts: outcome.attempts, last_error: outcome.error, settled_at: new Date() })
    .where('id', '=', id)
    .where('status', '=', 'queued')
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

export async function noteFailedAttempt(db: Executor, id: number, attempts: number, error: string | null): Promise<void> {
  await db.updateTable('webhook_messages').set({ attempts, last_error: error }).where('id', '=', id).execute();
}

/** The oldest held message of the lane, now queued; undefined when the lane is empty. */
export async function releaseNextInLane(db: Executor, subscriptionId: number, orderId: number): Promise<number | undefined> {
  const next = await db
    .selectFrom('webhook_messages')
    .select('id')
    .where('subscription_id', '=', subscriptionId)
    .where('order_id', '=', orderId)
    .where('status', '=', 'held')
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  if (!next) return undefined;
  await db.updateTable('webhook_messages').set({ status: 'queued' }).where('id', '=', next.id).execute();
  return next.id;
}

export async function insertDeliveryAttempt(
  db: Executor,
  values: {
    subscriptionId: number;
    eventId: number | null;
    eventType: string;
    messageId: string;
    attempt: number;
    statusCode: number | null;
    durationMs: number;
    success: boolean;
    error: string | null;
  },
): Promise<void> {
  await db
    .insertInto('webhook_deliveries')
    .values({
      subscription_id: values.subscriptionId,
      event_id: values.eventId,
      event_type: values.eventType,
      message_id: values.messageId,
      attempt: values.attempt,
      status_code: values.statusCode,
      duration_ms: values.durationMs,
      success: values.success,
      error: values.error,
    })
    .execute();
}
