import { sql, type Transaction } from 'kysely';
import type { Database, WebhookDeliveryRow, WebhookMessageRow, WebhookMessageStatus, WebhookSubscriptionRow } from '../../db/schema.ts';
import type { Db } from '../../db/database.ts';
import { countCapped, type CappedCount } from '../../db/capped-count.ts';

/** Serialises one lane's writers (two-key advisory lock, never colliding with pg-boss's single-key ones). */
export async function lockMessageLane(trx: Transaction<Database>, subscriptionId: number, orderId: number): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(${subscriptionId}::int, ${orderId}::int)`.execute(trx);
}

/** True when a message of the lane is in one of `statuses` (held and queued: waiting or in flight). */
export async function laneHas(db: Db, subscriptionId: number, orderId: number, statuses: WebhookMessageStatus[]): Promise<boolean> {
  const row = await db
    .selectFrom('webhook_messages')
    .select('id')
    .where('subscription_id', '=', subscriptionId)
    .where('order_id', '=', orderId)
    .where('status', 'in', statuses)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

export async function insertMessage(
  db: Db,
  values: {
    messageId: string;
    subscriptionId: number;
    eventId: number | null;
    orderId: number | null;
    eventType: string;
    payload: string;
    status: Extract<WebhookMessageStatus, 'held' | 'queued'>;
    traceparent: string | null;
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
      traceparent: values.traceparent,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
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

/** Moves a queued message to its final state (only once: a repeated job finds it settled). */
export async function settleMessage(
  db: Db,
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

/** A failed attempt of a message still queued; false when it was settled meanwhile (its subscription disabled). */
export async function noteFailedAttempt(db: Db, id: number, attempts: number, error: string | null): Promise<boolean> {
  const res = await db.updateTable('webhook_messages').set({ attempts, last_error: error }).where('id', '=', id).where('status', '=', 'queued').executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** What sending a message's next attempt needs of it. */
export type MessageToSend = Pick<WebhookMessageRow, 'id' | 'attempts' | 'traceparent'>;

/** The oldest held message of the lane, now queued; undefined when the lane is empty. */
export async function releaseNextInLane(db: Db, subscriptionId: number, orderId: number): Promise<MessageToSend | undefined> {
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

/**
 * Fails every pending message of a subscription, in the transaction that disables or deletes it; a
 * delivery in flight then finds its message settled. Returns how many it settled.
 */
export async function failPendingMessages(trx: Transaction<Database>, subscriptionId: number, error: string): Promise<number> {
  const res = await trx
    .updateTable('webhook_messages')
    .set({ status: 'failed', last_error: error, settled_at: new Date() })
    .where('subscription_id', '=', subscriptionId)
    .where('status', 'in', ['held', 'queued'])
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}

export async function insertDeliveryAttempt(
  db: Db,
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
    requestHeaders: Record<string, string>;
    responseBody: string | null;
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
      request_headers: JSON.stringify(values.requestHeaders),
      response_body: values.responseBody,
    })
    .execute();
}

/** The state of a message as subscribers see it: held and queued are both still pending. */
export type MessageState = 'pending' | 'delivered' | 'failed';

const STATUSES_OF: Record<MessageState, WebhookMessageStatus[]> = {
  pending: ['held', 'queued'],
  delivered: ['delivered'],
  failed: ['failed'],
};

export type DeliveryListRow = WebhookDeliveryRow & { order_id: number | null; message_status: WebhookMessageStatus | null };

/** Attempts of a subscription, newest first; the filters apply to the message of each attempt. */
export async function listDeliveries(
  db: Db,
  opts: { subscriptionId: number; limit: number; offset: number; status?: MessageState; eventType?: string; orderId?: number },
): Promise<{ rows: DeliveryListRow[]; total: number }> {
  let base = db
    .selectFrom('webhook_deliveries as d')
    .leftJoin('webhook_messages as m', 'm.message_id', 'd.message_id')
    .where('d.subscription_id', '=', opts.subscriptionId);
  if (opts.status !== undefined) base = base.where('m.status', 'in', STATUSES_OF[opts.status]);
  if (opts.eventType !== undefined) base = base.where('d.event_type', '=', opts.eventType);
  if (opts.orderId !== undefined) base = base.where('m.order_id', '=', opts.orderId);
  const [rows, count] = await Promise.all([
    base
      .selectAll('d')
      .select(['m.order_id', 'm.status as message_status'])
      .orderBy('d.id', 'desc')
      .limit(opts.limit)
      .offset(opts.offset)
      .execute(),
    base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.total) };
}

/**
 * Messages of a subscription, newest first, with a count capped as the administrators' lists are
 * (a subscription's messages grow with the shop). The page's ids come from the subscription's
 * index alone ((subscription_id, id), or by event_type or status), then the rows by primary key:
 * asked for the rows at once, PostgreSQL may walk the primary key backwards past every newer
 * message of other subscriptions (0.7 s against 7 ms, decision 145).
 */
export async function listMessages(
  db: Db,
  opts: { subscriptionId: number; limit: number; offset: number; status?: MessageState; eventType?: string },
): Promise<{ rows: WebhookMessageRow[]; count: CappedCount }> {
  let base = db.selectFrom('webhook_messages').where('subscription_id', '=', opts.subscriptionId);
  if (opts.status !== undefined) base = base.where('status', 'in', STATUSES_OF[opts.status]);
  if (opts.eventType !== undefined) base = base.where('event_type', '=', opts.eventType);
  const [rows, count] = await Promise.all([
    db
      .selectFrom('webhook_messages')
      .selectAll()
      .where('id', 'in', base.select('id').orderBy('id', 'desc').limit(opts.limit).offset(opts.offset))
      .orderBy('id', 'desc')
      .execute(),
    countCapped(db, base, opts.offset + opts.limit),
  ]);
  return { rows, count };
}

/** Every attempt of the given messages of one subscription, oldest first. */
export async function listAttemptsOf(db: Db, subscriptionId: number, messageIds: string[]): Promise<WebhookDeliveryRow[]> {
  if (messageIds.length === 0) return [];
  return db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('message_id', 'in', messageIds)
    .where('subscription_id', '=', subscriptionId)
    .orderBy('id')
    .execute();
}

/**
 * Attempts in [from, to) counted per UTC hour or day by outcome: of one subscription (its delivery
 * success; webhook_deliveries_subscription_time_idx), or of all when `subscriptionId` is absent.
 * Buckets without any attempt are absent.
 */
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
