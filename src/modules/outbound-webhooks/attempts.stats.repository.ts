import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { utcBucket } from '../../db/time-buckets.ts';

/**
 * Every subscription's delivery attempts in [from, to), counted per UTC hour or day by outcome
 * (the administrators' overview): webhook_deliveries_created_idx alone. Empty buckets are absent.
 */
export async function countAllAttemptsPerBucket(
  db: Db,
  opts: { bucket: 'hour' | 'day'; from: Date; to: Date },
): Promise<{ start: Date; succeeded: number; failed: number }[]> {
  const { group, start } = utcBucket(opts.bucket, 'created_at');
  const rows = await db
    .selectFrom('webhook_deliveries')
    .select([start.as('start'), sql<string>`count(*) FILTER (WHERE success)`.as('succeeded'), sql<string>`count(*) FILTER (WHERE NOT success)`.as('failed')])
    .where('created_at', '>=', opts.from)
    .where('created_at', '<', opts.to)
    .groupBy(group)
    .execute();
  return rows.map((r) => ({ start: new Date(r.start), succeeded: Number(r.succeeded), failed: Number(r.failed) }));
}
