import type { Db } from '../../db/database.ts';
import type { OrderEventRow } from '../../db/schema.ts';

/** The `order_events` outbox read as a feed by id (src/modules/live/), every read served by the primary key. */

/** The newest event's id (0 with no event): where a feed that starts now begins. */
export async function latestOrderEventId(db: Db): Promise<number> {
  const row = await db.selectFrom('order_events').select('id').orderBy('id', 'desc').limit(1).executeTakeFirst();
  return row?.id ?? 0;
}

/** Events after `after`, and those of `missing` (ids not seen yet below it), oldest first. */
export async function readOrderEventsAfter(db: Db, after: number, missing: readonly number[], limit: number): Promise<OrderEventRow[]> {
  return db
    .selectFrom('order_events')
    .selectAll()
    .where((eb) => (missing.length > 0 ? eb.or([eb('id', '>', after), eb('id', 'in', [...missing])]) : eb('id', '>', after)))
    .orderBy('id')
    .limit(limit)
    .execute();
}

/** Up to `limit` events after `after` (those of `userId`'s orders, when given), oldest first. */
export async function replayOrderEvents(db: Db, opts: { after: number; userId: number | undefined; limit: number }): Promise<OrderEventRow[]> {
  let q = db.selectFrom('order_events').selectAll().where('id', '>', opts.after);
  if (opts.userId !== undefined) q = q.where('user_id', '=', opts.userId);
  return q.orderBy('id').limit(opts.limit).execute();
}
