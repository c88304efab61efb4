import type { Transaction } from 'kysely';
import type { Db } from '../db/database.ts';
import type { Database } from '../db/schema.ts';
import { jobSubjectOf } from './registry.ts';

/** The subjects whose jobs an order's trace shows. */
export interface JobSubjects {
  orderId: number;
  inboundWebhookIds: readonly number[];
  messageRowIds: readonly number[];
}

// The service's SQL on `job_links` (pg-boss's own tables are reached only through its API).

/** Records what the jobs of `queue` that are about something are about; a job linked already stays as it is. */
export async function insertJobLinks(db: Db | Transaction<Database>, queue: string, jobs: readonly { id: string; data: unknown }[]): Promise<void> {
  const links = jobs.flatMap(({ id, data }) => {
    const s = jobSubjectOf(data);
    return s ? [{ job_id: id, queue, order_id: s.orderId, inbound_webhook_id: s.inboundWebhookId, message_row_id: s.messageRowId }] : [];
  });
  if (links.length === 0) return;
  await db.insertInto('job_links').values(links).onConflict((oc) => oc.column('job_id').doNothing()).execute();
}

/** The jobs sent for an order, for its platform webhooks and for its outgoing messages, oldest first. */
export async function findJobLinks(db: Db, about: JobSubjects): Promise<{ queue: string; job_id: string }[]> {
  const links = () => db.selectFrom('job_links').select(['queue', 'job_id']);
  let q = links().where('order_id', '=', about.orderId);
  if (about.inboundWebhookIds.length > 0) q = q.union(links().where('inbound_webhook_id', 'in', [...about.inboundWebhookIds]));
  if (about.messageRowIds.length > 0) q = q.union(links().where('message_row_id', 'in', [...about.messageRowIds]));
  return q.execute();
}

/** Deletes up to `limit` links created before `before` (their jobs are gone by then); returns how many. */
export async function purgeJobLinks(db: Db, before: Date, limit: number): Promise<number> {
  const result = await db
    .deleteFrom('job_links')
    .where('job_id', 'in', (eb) => eb.selectFrom('job_links').select('job_id').where('created_at', '<', before).orderBy('created_at').limit(limit))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** True when a job of `queue` about platform webhook `inboundWebhookId` was sent after `since`. */
export async function inboundJobSentSince(db: Db, queue: string, inboundWebhookId: number, since: Date): Promise<boolean> {
  const row = await db
    .selectFrom('job_links')
    .select('job_id')
    .where('inbound_webhook_id', '=', inboundWebhookId)
    .where('queue', '=', queue)
    .where('created_at', '>', since)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}
