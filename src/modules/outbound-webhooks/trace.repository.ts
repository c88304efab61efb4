import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { WebhookDeliveryRow, WebhookMessageRow } from './outbound-webhooks.tables.ts';

/** Every message of an order's events, to every subscription, with the subscription's URL; in creation order. */
export async function findOrderMessages(db: Db, orderId: number): Promise<(WebhookMessageRow & { url: string })[]> {
  return db
    .selectFrom('webhook_messages as m')
    .innerJoin('webhook_subscriptions as s', 's.id', 'm.subscription_id')
    .selectAll('m')
    .select('s.url')
    .where('m.order_id', '=', orderId)
    .orderBy('m.id', 'asc')
    .execute();
}

/** Every recorded attempt of the given messages (by message id; of one subscription, if given), oldest first. */
export async function findMessageAttempts(db: Db, messageIds: readonly string[], subscriptionId?: number): Promise<WebhookDeliveryRow[]> {
  if (messageIds.length === 0) return [];
  let query = db.selectFrom('webhook_deliveries').selectAll().where('message_id', 'in', [...messageIds]);
  if (subscriptionId !== undefined) query = query.where('subscription_id', '=', subscriptionId);
  return query.orderBy('id', 'asc').execute();
}

/** Seconds since the oldest message not yet delivered (waiting its turn or its next attempt) was created; 0 when none. */
export async function oldestUndeliveredAgeSeconds(db: Db): Promise<number> {
  const { rows } = await sql<{ age: number | null }>`
    SELECT extract(epoch FROM now() - min(created_at))::float8 AS age
    FROM webhook_messages WHERE status IN ('held', 'queued')
  `.execute(db);
  return Math.max(0, Number(rows[0]?.age ?? 0));
}

/** Deletes up to `limit` messages settled before `before`, with their attempts; returns how many. */
export async function purgeSettledMessages(db: Db, before: Date, limit: number): Promise<number> {
  const { rows } = await sql<{ deleted: number }>`
    WITH doomed AS (
      SELECT id, message_id FROM webhook_messages
      WHERE status IN ('delivered', 'failed') AND settled_at < ${before}
      ORDER BY settled_at
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    ), attempts AS (
      DELETE FROM webhook_deliveries d USING doomed m WHERE d.message_id = m.message_id
      RETURNING 1
    ), gone AS (
      DELETE FROM webhook_messages w USING doomed m WHERE w.id = m.id
      RETURNING 1
    )
    SELECT count(*)::integer AS deleted FROM gone
  `.execute(db);
  return Number(rows[0]?.deleted ?? 0);
}
