import { sql, type RawBuilder } from 'kysely';

/**
 * The rows of `alias` (a FROM item of the query, grouped by the aggregate) as the text of a JSON
 * array, in `orderBy`'s order, `[]` when there are none: the text `JSON.stringify` gives for the
 * rows' objects. string_agg, not json_agg, which puts a line break between the elements.
 */
export function jsonArrayText(alias: string, orderBy: RawBuilder<unknown>): RawBuilder<string> {
  return sql<string>`'[' || coalesce(string_agg(row_to_json(${sql.table(alias)})::text, ',' ORDER BY ${orderBy}), '') || ']'`;
}
