import type { Db } from '../../db/database.ts';
import type { OrderStatus } from '../../db/schema.ts';
import { iso } from '../../http/common.schemas.ts';
import { invalidQuery } from '../../http/errors.ts';
import { AFTER_LATEST_MS, BUCKET_MS, EARLIEST_MS, MAX_BUCKETS, askedRange } from '../../http/validation.ts';
import { countInboundWebhooksByStatus } from '../inbound-webhooks/inbound-webhooks.repository.ts';
import { countOrdersPerBucket, mostShortProducts } from '../orders/orders.reads.repository.ts';
import { countAttemptsPerBucket } from '../outbound-webhooks/messages.repository.ts';
import { findSkusAndNames } from '../products/products.repository.ts';
import type { Stats, StatsQuery } from './stats.schemas.ts';

type Bucket = StatsQuery['bucket'];

/** distinct ranges kept at once: the overview asks for two, a few admins' own ranges fit beside them */
const CACHE_ENTRIES = 64;

/** The whole buckets that hold [from, to): from rounded down, to up, both in UTC. */
function bucketRange(q: StatsQuery): { from: number; to: number; count: number } {
  const unit = BUCKET_MS[q.bucket];
  const { from, to } = askedRange(q, q.bucket);
  if (from >= to) throw invalidQuery('to', 'is not after from');
  const range = { from: Math.floor(from / unit) * unit, to: Math.ceil(to / unit) * unit };
  if (range.from < EARLIEST_MS) throw invalidQuery('from', 'is before the year 1');
  if (range.to >= AFTER_LATEST_MS) throw invalidQuery('to', 'is after the year 9999');
  const count = (range.to - range.from) / unit;
  if (count > MAX_BUCKETS) throw invalidQuery('from', `the range holds ${count} ${q.bucket}s, more than ${MAX_BUCKETS}`);
  return { ...range, count };
}

/** The overview's figures, read from the modules that own them; the same buckets within cacheSeconds share one reading. */
export function statsReader(deps: { db: Db; currency: string; cacheSeconds: number }): (q: StatsQuery) => Promise<Stats> {
  const cache = new Map<string, { expires: number; stats: Promise<Stats> }>();
  return (q) => {
    const range = bucketRange(q);
    const key = `${q.bucket} ${range.from} ${range.to}`;
    const now = Date.now();
    const kept = cache.get(key);
    if (kept !== undefined && kept.expires > now) return kept.stats;
    const stats = computeStats(deps, q.bucket, range);
    if (deps.cacheSeconds > 0) {
      cache.delete(key);
      cache.set(key, { expires: now + deps.cacheSeconds * 1000, stats });
      // a failed reading is not kept
      stats.catch(() => cache.get(key)?.stats === stats && cache.delete(key));
      if (cache.size > CACHE_ENTRIES) cache.delete(cache.keys().next().value as string);
    }
    return stats;
  };
}

async function computeStats({ db, currency }: { db: Db; currency: string }, bucket: Bucket, range: { from: number; to: number; count: number }): Promise<Stats> {
  const unit = BUCKET_MS[bucket];
  const between = { bucket, from: new Date(range.from), to: new Date(range.to) };
  const [orderRows, short, inbound, attempts] = await Promise.all([
    countOrdersPerBucket(db, between),
    mostShortProducts(db, { ...between, limit: 10 }),
    countInboundWebhooksByStatus(db, between),
    countAttemptsPerBucket(db, between),
  ]);
  const products = await findSkusAndNames(db, short.map((s) => s.product_id));

  const starts = Array.from({ length: range.count }, (_, i) => iso(new Date(range.from + i * unit)));
  const slot = (d: Date) => (d.getTime() - range.from) / unit;
  const orders = starts.map((start) => ({ start, pending: 0, processing: 0, completed: 0, failed: 0, cancelled: 0 }) satisfies Record<OrderStatus, number> & { start: string });
  const revenue = starts.map((start) => ({ start, amount: '0.00' }));
  for (const r of orderRows) {
    orders[slot(r.start)][r.status] = r.orders;
    if (r.status === 'completed') revenue[slot(r.start)].amount = r.amount;
  }
  const deliveries = starts.map((start) => ({ start, succeeded: 0, failed: 0 }));
  for (const r of attempts) Object.assign(deliveries[slot(r.start)], { succeeded: r.succeeded, failed: r.failed });
  return {
    from: iso(between.from),
    to: iso(between.to),
    bucket,
    currency,
    orders,
    revenue,
    short_products: short.map((s) => ({ ...s, sku: products.get(s.product_id)?.sku ?? '', name: products.get(s.product_id)?.name ?? '' })),
    inbound_webhooks: Object.entries(inbound).map(([status, count]) => ({ status: status as keyof typeof inbound, count })),
    deliveries,
  };
}
