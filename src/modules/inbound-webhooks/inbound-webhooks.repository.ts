import { sql, type Insertable, type QueryCreator, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { InboundWebhookRow, InboundWebhooksTable, InboundWebhookStatus, PlatformCancellationsTable } from './inbound-webhooks.tables.ts';
import { countCapped, type CappedCount } from '../../db/capped-count.ts';
import type { Db } from '../../db/database.ts';

/** Stores a payload once per delivery (webhook id, event id, with `checkDigest` the body too); undefined when stored before. */
export async function insertInboundWebhook(
  trx: Transaction<Database>,
  values: Required<Pick<Insertable<InboundWebhooksTable>, 'webhook_id' | 'event_id' | 'topic' | 'shop_domain' | 'raw_body' | 'raw_body_encoding'>> & { body_sha256: string; headers: Record<string, string> },
  checkDigest: boolean,
): Promise<number | undefined> {
  // the digest's lock is a statement of its own, so the insert's snapshot sees every earlier copy
  if (checkDigest) {
    await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`inbound-body:${values.body_sha256}`}, 0))`.execute(trx);
  }
  const unseen = checkDigest ? sql`NOT EXISTS (SELECT 1 FROM inbound_webhooks WHERE body_sha256 = ${values.body_sha256})` : sql`true`;
  // ON CONFLICT: either unique index, the webhook id or the event id when given
  const { rows } = await sql<{ id: number }>`
    INSERT INTO inbound_webhooks (webhook_id, event_id, body_sha256, topic, shop_domain, headers, raw_body, raw_body_encoding)
    SELECT ${values.webhook_id}, ${values.event_id}, ${values.body_sha256}, ${values.topic}, ${values.shop_domain},
           ${JSON.stringify(values.headers)}::jsonb, ${values.raw_body}, ${values.raw_body_encoding}
    WHERE ${unseen}
    ON CONFLICT DO NOTHING
    RETURNING id`.execute(trx);
  return rows[0]?.id;
}

/** A stored event; with `lock`, locked until `db`'s transaction ends (the processing transaction takes the same lock). */
export async function findInboundWebhook(db: Db, id: number, lock = false): Promise<InboundWebhookRow | undefined> {
  const row = db.selectFrom('inbound_webhooks').selectAll().where('id', '=', id);
  return (lock ? row.forUpdate() : row).executeTakeFirst();
}

/**
 * Locks the stored event and returns its status, then takes the lock that serialises platform order `externalId`'s
 * creation and cancellation until `trx` ends: a cancellation finds the order or leaves its record for the creation.
 */
export async function lockForPlatformOrder(
  trx: Transaction<Database>,
  id: number,
  source: string,
  externalId: string,
): Promise<InboundWebhookRow['status'] | undefined> {
  const { rows } = await sql<{ status: InboundWebhookRow['status'] }>`
    WITH w AS MATERIALIZED (SELECT status FROM inbound_webhooks WHERE id = ${id} FOR UPDATE)
    SELECT w.status, pg_advisory_xact_lock(hashtext(${`platform-order:${source}:${externalId}`})) AS locked FROM w`.execute(trx);
  return rows[0]?.status;
}

type Outcome = { status: 'processed' | 'failed'; orderId: number | null; error: string | null };

/** Records the outcome once: a stored event already processed or failed stays as it is. */
function settleStatement(db: QueryCreator<Database>, id: number, outcome: Outcome, at: Date) {
  return db
    .updateTable('inbound_webhooks')
    .set({ status: outcome.status, order_id: outcome.orderId, error: outcome.error, processed_at: at })
    .where('id', '=', id)
    .where('status', '=', 'received');
}

export async function settleInboundWebhook(db: Db, id: number, outcome: Outcome): Promise<boolean> {
  const res = await settleStatement(db, id, outcome, new Date()).executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** Back to `received`, to be processed again; the order it is linked to (if any) stays linked. */
export async function resetInboundWebhook(trx: Transaction<Database>, id: number): Promise<void> {
  await trx.updateTable('inbound_webhooks').set({ status: 'received', error: null, processed_at: null }).where('id', '=', id).execute();
}

const summaryColumns = ['id', 'webhook_id', 'topic', 'shop_domain', 'status', 'error', 'order_id', 'received_at', 'processed_at'] as const;
export type InboundWebhookSummaryRow = Pick<InboundWebhookRow, (typeof summaryColumns)[number]>;

/** A page of stored events, newest first, and how many match, counted up to a cap (countCapped). */
export async function listInboundWebhooks(
  db: Db,
  f: { status?: InboundWebhookStatus; topic?: string },
  page: { limit: number; offset: number },
): Promise<{ rows: InboundWebhookSummaryRow[]; count: CappedCount }> {
  let matching = db.selectFrom('inbound_webhooks');
  if (f.status !== undefined) matching = matching.where('status', '=', f.status);
  if (f.topic !== undefined) matching = matching.where('topic', '=', f.topic);
  const [rows, count] = await Promise.all([
    matching.select(summaryColumns).orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute(),
    countCapped(db, matching, page.offset + page.limit),
  ]);
  return { rows, count };
}

/** The events that created or were linked to an order, oldest first. */
export async function findInboundWebhooksForOrder(db: Db, orderId: number): Promise<InboundWebhookSummaryRow[]> {
  return db.selectFrom('inbound_webhooks').select(summaryColumns).where('order_id', '=', orderId).orderBy('id', 'asc').execute();
}

/** Events per status: received in [from, to) (inbound_webhooks_received_idx alone), else `received` and `failed` (the status index). */
export async function countInboundWebhooksByStatus(db: Db, range?: { from: Date; to: Date }): Promise<Record<InboundWebhookStatus, number>> {
  const all = db.selectFrom('inbound_webhooks').select((eb) => ['status', eb.fn.countAll<string>().as('n')]);
  const matching = range ? all.where('received_at', '>=', range.from).where('received_at', '<', range.to) : all.where('status', 'in', ['received', 'failed']);
  const rows = await matching.groupBy('status').execute();
  const counts: Record<InboundWebhookStatus, number> = { received: 0, processed: 0, failed: 0 };
  for (const r of rows) counts[r.status] = Number(r.n);
  return counts;
}

/** Removes the body and headers of up to `limit` events processed before `before`; the row stays. */
export async function purgeProcessedPayloads(db: Db, before: Date, limit: number): Promise<number> {
  const res = await db
    .updateTable('inbound_webhooks')
    .set({ raw_body: null, headers: '{}', payload_purged_at: new Date() })
    // checked again on the row itself: an event being reprocessed meanwhile keeps its payload
    .where('status', '=', 'processed')
    .where('raw_body', 'is not', null)
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('inbound_webhooks')
        .select('id')
        .where('status', '=', 'processed')
        .where('raw_body', 'is not', null)
        .where('processed_at', '<', before)
        .orderBy('processed_at')
        .limit(limit),
    )
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}

/** Records a cancellation of an order not seen yet (the first one kept when the platform repeats it). */
export async function recordPlatformCancellation(trx: Transaction<Database>, values: Insertable<PlatformCancellationsTable>): Promise<void> {
  await trx
    .insertInto('platform_cancellations')
    .values(values)
    .onConflict((oc) => oc.columns(['source', 'external_id']).doNothing())
    .execute();
}

/** Settles event `id` as processed into `orderId`, and takes (marks applied) a cancellation that arrived first. */
export async function settleTakingWaitingCancellation(
  trx: Transaction<Database>,
  id: number,
  orderId: number,
  source: string,
  externalId: string,
): Promise<{ inbound_webhook_id: number; reason: string | null } | undefined> {
  const now = new Date();
  // the settling is a data-modifying CTE: PostgreSQL runs it whether or not the statement reads it
  return trx
    .with('settled', (db) => settleStatement(db, id, { status: 'processed', orderId, error: null }, now))
    .updateTable('platform_cancellations')
    .set({ applied_at: now })
    .where('source', '=', source)
    .where('external_id', '=', externalId)
    .where('applied_at', 'is', null)
    .returning(['inbound_webhook_id', 'reason'])
    .executeTakeFirst();
}

/** Links a stored cancellation webhook to the order it cancelled, once that order exists. */
export async function linkInboundWebhook(trx: Transaction<Database>, id: number, orderId: number): Promise<void> {
  await trx.updateTable('inbound_webhooks').set({ order_id: orderId }).where('id', '=', id).execute();
}
