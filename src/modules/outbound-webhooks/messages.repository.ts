import { sql, type Insertable, type Transaction, type Updateable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { WebhookDeliveriesTable, WebhookDeliveryRow, WebhookMessageRow, WebhookMessagesTable, WebhookMessageStatus, WebhookSubscriptionRow } from './outbound-webhooks.tables.ts';
import type { Db } from '../../db/database.ts';
import { countCapped, type CappedCount } from '../../db/capped-count.ts';

/** Serialises one lane's writers (two-key advisory lock, never colliding with pg-boss's single-key ones). */
export async function lockMessageLane(trx: Transaction<Database>, subscriptionId: number, orderId: number): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(${subscriptionId}::int, ${orderId}::int)`.execute(trx);
}

function laneIds(db: Db, subscriptionId: number, orderId: number, statuses: WebhookMessageStatus[]) {
  return db
    .selectFrom('webhook_messages')
    .select('id')
    .where('subscription_id', '=', subscriptionId)
    .where('order_id', '=', orderId)
    .where('status', 'in', statuses);
}

/** True when a message of the lane is in one of `statuses` (held and queued: waiting or in flight). */
export async function laneHas(db: Db, subscriptionId: number, orderId: number, statuses: WebhookMessageStatus[]): Promise<boolean> {
  return (await laneIds(db, subscriptionId, orderId, statuses).limit(1).executeTakeFirst()) !== undefined;
}

export async function insertMessage(
  db: Db,
  values: Insertable<WebhookMessagesTable> & { status: Extract<WebhookMessageStatus, 'held' | 'queued'> },
): Promise<WebhookMessageRow> {
  return db.insertInto('webhook_messages').values(values).returningAll().executeTakeFirstOrThrow();
}

export async function findMessageWithSubscription(
  db: Db,
  id: number,
): Promise<{ message: WebhookMessageRow; subscription: WebhookSubscriptionRow } | undefined> {
  const message = await db.selectFrom('webhook_messages').selectAll().where('id', '=', id).executeTakeFirst();
  if (!message) return undefined;
  const subscription = await db.selectFrom('webhook_subscriptions').selectAll().where('id', '=', message.subscription_id).executeTakeFirst();
  return subscription ? { message, subscription } : undefined;
}

/** A message of one subscription by its public id (`webhook-id`). */
export async function findMessage(db: Db, subscriptionId: number, messageId: string): Promise<WebhookMessageRow | undefined> {
  return db
    .selectFrom('webhook_messages')
    .selectAll()
    .where('message_id', '=', messageId)
    .where('subscription_id', '=', subscriptionId)
    .executeTakeFirst();
}

/** Updates a message still queued (settling it happens once: a repeated job finds it settled); false when it was settled meanwhile. */
export async function updateQueuedMessage(db: Db, id: number, patch: Updateable<WebhookMessagesTable>): Promise<boolean> {
  const res = await db.updateTable('webhook_messages').set(patch).where('id', '=', id).where('status', '=', 'queued').executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

export type MessageToSend = Pick<WebhookMessageRow, 'id' | 'attempts' | 'traceparent'>;

/** The oldest held message of the lane, now queued; undefined when the lane is empty. */
export async function releaseNextInLane(db: Db, subscriptionId: number, orderId: number): Promise<MessageToSend | undefined> {
  const next = await laneIds(db, subscriptionId, orderId, ['held']).orderBy('id').limit(1).executeTakeFirst();
  if (!next) return undefined;
  return db
    .updateTable('webhook_messages')
    .set({ status: 'queued' })
    .where('id', '=', next.id)
    .returning(['id', 'attempts', 'traceparent'])
    .executeTakeFirstOrThrow();
}

/** Messages of a subscription that failed for good at or after `since`, oldest first. */
export async function failedMessagesSince(db: Db, subscriptionId: number, since: Date): Promise<{ id: number; order_id: number | null }[]> {
  return db
    .selectFrom('webhook_messages')
    .select(['id', 'order_id'])
    .where('subscription_id', '=', subscriptionId)
    .where('status', '=', 'failed')
    .where('settled_at', '>=', since)
    .orderBy('id')
    .execute();
}

/** Settled messages back to `status` with a fresh retry schedule; ones no longer settled are left alone. */
export async function requeueMessages(
  db: Db,
  ids: number[],
  status: Extract<WebhookMessageStatus, 'held' | 'queued'>,
): Promise<MessageToSend[]> {
  if (ids.length === 0) return [];
  return db
    .updateTable('webhook_messages')
    .set((eb) => ({ status, retry_base: eb.ref('attempts'), settled_at: null }))
    .where('id', 'in', ids)
    .where('status', 'in', ['delivered', 'failed'])
    .returning(['id', 'attempts', 'traceparent'])
    .execute();
}

/** Why a disabled or deleted subscription's pending messages failed. */
export const SUBSCRIPTION_GONE_ERROR = 'subscription is disabled or deleted';

/** Fails every pending message of a subscription, in the transaction that disables or deletes it (a delivery in flight then finds it settled). */
export async function failPendingMessages(trx: Transaction<Database>, subscriptionId: number): Promise<number> {
  const res = await trx
    .updateTable('webhook_messages')
    .set({ status: 'failed', last_error: SUBSCRIPTION_GONE_ERROR, settled_at: new Date() })
    .where('subscription_id', '=', subscriptionId)
    .where('status', 'in', ['held', 'queued'])
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}

export async function insertDeliveryAttempt(db: Db, values: Insertable<WebhookDeliveriesTable>): Promise<void> {
  await db.insertInto('webhook_deliveries').values(values).execute();
}

export type PageParams = { page: number; page_size: number };

/** The states of a message as subscribers see them (held and queued are both still pending), each with its statuses. */
const STATUSES_OF = { pending: ['held', 'queued'], delivered: ['delivered'], failed: ['failed'] } satisfies Record<string, WebhookMessageStatus[]>;
export type MessageState = keyof typeof STATUSES_OF;

export type DeliveryListRow = WebhookDeliveryRow & { order_id: number | null; message_status: WebhookMessageStatus | null };

/** Attempts of a subscription, newest first; the filters apply to the message of each attempt. */
export async function listDeliveries(
  db: Db,
  subscriptionId: number,
  q: PageParams & { status?: MessageState; event_type?: string; order_id?: number },
): Promise<{ rows: DeliveryListRow[]; total: number }> {
  let base = db
    .selectFrom('webhook_deliveries as d')
    .leftJoin('webhook_messages as m', 'm.message_id', 'd.message_id')
    .where('d.subscription_id', '=', subscriptionId);
  if (q.status !== undefined) base = base.where('m.status', 'in', STATUSES_OF[q.status]);
  if (q.event_type !== undefined) base = base.where('d.event_type', '=', q.event_type);
  if (q.order_id !== undefined) base = base.where('m.order_id', '=', q.order_id);
  const [rows, count] = await Promise.all([
    base
      .selectAll('d')
      .select(['m.order_id', 'm.status as message_status'])
      .orderBy('d.id', 'desc')
      .limit(q.page_size)
      .offset((q.page - 1) * q.page_size)
      .execute(),
    base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.total) };
}

/**
 * Messages of a subscription, newest first, with a capped count. The page's ids come from its indexes alone, then the rows:
 * asked for the rows at once, PostgreSQL may walk the primary key back past other subscriptions' messages (decision 145).
 */
export async function listMessages(
  db: Db,
  subscriptionId: number,
  q: PageParams & { status?: MessageState; event_type?: string },
): Promise<{ rows: WebhookMessageRow[]; count: CappedCount }> {
  let base = db.selectFrom('webhook_messages').where('subscription_id', '=', subscriptionId);
  if (q.status !== undefined) base = base.where('status', 'in', STATUSES_OF[q.status]);
  if (q.event_type !== undefined) base = base.where('event_type', '=', q.event_type);
  const [rows, count] = await Promise.all([
    db
      .selectFrom('webhook_messages')
      .selectAll()
      .where('id', 'in', base.select('id').orderBy('id', 'desc').limit(q.page_size).offset((q.page - 1) * q.page_size))
      .orderBy('id', 'desc')
      .execute(),
    countCapped(db, base, q.page * q.page_size),
  ]);
  return { rows, count };
}

/** Attempts in [from, to) per UTC hour or day by outcome, of one subscription or of all; buckets without attempts are absent. */
export async function countAttemptsPerBucket(
  db: Db,
  opts: { subscriptionId?: number; bucket: 'hour' | 'day'; from: Date; to: Date },
): Promise<{ start: Date; succeeded: number; failed: number }[]> {
  const start = sql<Date>`date_trunc(${sql.lit(opts.bucket)}, created_at, 'UTC')`;
  let query = db
    .selectFrom('webhook_deliveries')
    .select([
      start.as('start'),
      sql<string>`count(*) FILTER (WHERE success)`.as('succeeded'),
      sql<string>`count(*) FILTER (WHERE NOT success)`.as('failed'),
    ])
    .where('created_at', '>=', opts.from)
    .where('created_at', '<', opts.to);
  if (opts.subscriptionId !== undefined) query = query.where('subscription_id', '=', opts.subscriptionId);
  const rows = await query.groupBy(start).execute();
  return rows.map((r) => ({ start: new Date(r.start), succeeded: Number(r.succeeded), failed: Number(r.failed) }));
}
