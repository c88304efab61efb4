import type { Kysely } from 'kysely';
import type { Database, InboundBodyEncoding, InboundWebhookRow, ProductRow } from '../../db/schema.ts';

type Executor = Kysely<Database>;

/** Stores a received payload once per webhook id; undefined when that id was already stored. */
export async function insertInboundWebhook(
  db: Executor,
  values: {
    webhookId: string;
    topic: string | null;
    shopDomain: string | null;
    headers: Record<string, string>;
    rawBody: string;
    rawBodyEncoding: InboundBodyEncoding;
  },
): Promise<number | undefined> {
  const row = await db
    .insertInto('inbound_webhooks')
    .values({
      webhook_id: values.webhookId,
      topic: values.topic,
      shop_domain: values.shopDomain,
      headers: JSON.stringify(values.headers),
      raw_body: values.rawBody,
      raw_body_encoding: values.rawBodyEncoding,
    })
    .onConflict((oc) => oc.column('webhook_id').doNothing())
    .returning('id')
    .executeTakeFirst();
  return row?.id;
}

export async function findInboundWebhook(db: Executor, id: number): Promise<InboundWebhookRow | undefined> {
  return db.selectFrom('inbound_webhooks').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Locks the stored event for its processing transaction and returns its current status. */
export async function lockInboundWebhook(db: Executor, id: number): Promise<InboundWebhookRow['status'] | undefined> {
  const row = await db.selectFrom('inbound_webhooks').select('status').where('id', '=', id).forUpdate().executeTakeFirst();
  return row?.status;
}

/** Records the outcome once: a stored event that is already processed or failed stays as it is. */
export async function settleInboundWebhook(
  db: Executor,
  id: number,
  outcome: { status: 'processed' | 'failed'; orderId: number | null; error: string | null },
): Promise<boolean> {
  const res = await db
    .updateTable('inbound_webhooks')
    .set({ status: outcome.status, order_id: outcome.orderId, error: outcome.error, processed_at: new Date() })
    .where('id', '=', id)
    .where('status', '=', 'received')
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

export async function findOrderByExternalId(db: Executor, source: string, externalId: string): Promise<{ id: number } | undefined> {
  return db.selectFrom('orders').select('id').where('source', '=', source).where('external_id', '=', externalId).executeTakeFirst();
}

export async function findProductsBySku(db: Executor, skus: string[]): Promise<ProductRow[]> {
  if (skus.length === 0) return [];
  return db.selectFrom('products').selectAll().where('sku', 'in', skus).execute();
}

/** The order's lines with their SKUs, for the fulfilment report. */
export async function findOrderForReport(
  db: Executor,
  orderId: number,
): Promise<{ id: number; status: string; failure_reason: string | null; source: string; external_id: string | null; lines: { sku: string; quantity: number }[] } | undefined> {
  const order = await db
    .selectFrom('orders')
    .select(['id', 'status', 'failure_reason', 'source', 'external_id'])
    .where('id', '=', orderId)
    .executeTakeFirst();
  if (!order) return undefined;
  const lines = await db
    .selectFrom('order_items as i')
    .innerJoin('products as p', 'p.id', 'i.product_id')
    .select(['p.sku', 'i.quantity'])
    .where('i.order_id', '=', orderId)
    .orderBy('i.id')
    .execute();
  return { ...order, lines };
}

export async function orderSource(db: Executor, orderId: number): Promise<{ source: string; external_id: string | null } | undefined> {
  return db.selectFrom('orders').select(['source', 'external_id']).where('id', '=', orderId).executeTakeFirst();
}
