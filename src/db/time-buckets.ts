import { sql } from 'kysely';

/**
 * The UTC hour or day of a timestamptz `column`, to group by (`AT TIME ZONE 'UTC'` costs a third of
 * date_trunc's time-zone argument), and the bucket's start as a timestamptz, to select.
 */
export function utcBucket(bucket: 'hour' | 'day', column: string) {
  const group = sql<Date>`date_trunc(${sql.lit(bucket)}, ${sql.ref(column)} AT TIME ZONE 'UTC')`;
  return { group, start: sql<Date>`${group} AT TIME ZONE 'UTC'` };
}
