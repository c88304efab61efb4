import { sql, type SelectQueryBuilder } from 'kysely';
import type { Db } from './database.ts';
import type { Database } from './schema.ts';

/** The most rows an administrators' list counts: the total of a larger list is "at least". */
export const COUNT_CAP = 10_000;

export interface CappedCount {
  total: number;
  /** false: more rows match than `total` says */
  exact: boolean;
}

/** How many rows `rows` selects, reading at most COUNT_CAP or `atLeast` (the page's end: whether another follows) index entries. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any table and filter of the schema
export async function countCapped(db: Db, rows: SelectQueryBuilder<Database, any, object>, atLeast: number): Promise<CappedCount> {
  const cap = Math.max(COUNT_CAP, atLeast);
  const capped = rows.select(sql.lit(1).as('one')).limit(cap + 1).as('capped');
  const { n } = await db.selectFrom(capped).select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
  const total = Number(n);
  return total > cap ? { total: cap, exact: false } : { total, exact: true };
}
