import type { FastifyBaseLogger } from 'fastify';
import { HOUSEKEEPING_RETRY, type JobQueue } from './queue.ts';
import type { JobName } from './registry.ts';

/** Rows one purge statement (its own short transaction) deletes at most. */
const PURGE_BATCH = 1000;

/** How long one scheduled run may keep purging; what is left goes with the next run. */
const PURGE_BUDGET_MS = 60_000;

const DAY_MS = 24 * 60 * 60 * 1000;

/** The moment before which records kept for `days` are due, or undefined when `days` is 0 (keep forever). */
export function retentionCutoff(days: number, now = Date.now()): Date | undefined {
  return days > 0 ? new Date(now - days * DAY_MS) : undefined;
}

/** Runs `batch` (removing at most `limit` rows, returning how many) until one comes back short or the budget is spent. */
export async function purgeInBatches(
  what: string,
  log: FastifyBaseLogger,
  batch: (limit: number) => Promise<number>,
  opts: { batchSize?: number; budgetMs?: number } = {},
): Promise<number> {
  const batchSize = opts.batchSize ?? PURGE_BATCH;
  const deadline = Date.now() + (opts.budgetMs ?? PURGE_BUDGET_MS);
  let total = 0;
  for (;;) {
    const n = await batch(batchSize);
    total += n;
    if (n < batchSize) break;
    if (Date.now() >= deadline) {
      log.info({ what, purged: total }, 'retention purge paused: its time budget is spent, the next run goes on');
      return total;
    }
  }
  if (total > 0) log.info({ what, purged: total }, 'retention purge');
  return total;
}

/** A scheduled retention purge on its own queue: at `cron`, `batch` removes the records older than `days` (0: none). */
export function schedulePurge(
  queue: JobQueue,
  log: FastifyBaseLogger,
  purge: { name: JobName; cron: string; what: string; days: number; batch: (before: Date, limit: number) => Promise<number> },
): void {
  queue.define({ name: purge.name, ...HOUSEKEEPING_RETRY });
  queue.work(purge.name, async () => {
    const before = retentionCutoff(purge.days);
    if (before) await purgeInBatches(purge.what, log, (limit) => purge.batch(before, limit));
  });
  queue.scheduleCron(purge.name, purge.cron);
}
