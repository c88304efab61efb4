import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { UserRow } from '../../db/schema.ts';

/** A customer as the administrators' order list and export name it. */
export type Customer = Pick<UserRow, 'id' | 'email'> & { name: string };

/**
 * Ids of users (deleted ones too: their orders stay) whose e-mail or name starts with `prefix`, or
 * with each of its words a word of the name starts, any case (users_*_prefix_idx, users_name_words_idx).
 */
export function customerIdsByPrefix(db: Db, prefix: string) {
  const lower = prefix.toLowerCase();
  // LIKE's wildcards and its escape character in the text stand for themselves
  const pattern = `${lower.replace(/[\\%_]/g, '\\$&')}%`;
  // words only for a text of letters, digits and spaces (not an address, not `100%`); nothing else
  // reaches to_tsquery, so nothing in the text is read as its syntax
  const words = /^[\p{L}\p{N}\s]+$/u.test(prefix) ? lower.split(/\s+/).filter(Boolean) : undefined;
  return db
    .selectFrom('users')
    .select('id')
    .where((eb) =>
      eb.or([
        eb(sql<string>`lower(email)`, 'like', pattern),
        eb(sql<string>`lower(full_name)`, 'like', pattern),
        ...(words?.length ? [sql<boolean>`to_tsvector('simple', full_name) @@ to_tsquery('simple', ${words.map((w) => `${w}:*`).join(' & ')})`] : []),
      ]),
    );
}

/** Up to `limit` of those ids, which the admin orders search passes as values. */
export async function findCustomerIdsByPrefix(db: Db, prefix: string, limit: number): Promise<number[]> {
  const rows = await customerIdsByPrefix(db, prefix).limit(limit).execute();
  return rows.map((r) => r.id);
}

/** The customers with these ids, by id (one statement, the primary key's index). */
export async function findCustomers(db: Db, ids: readonly number[]): Promise<Map<number, Customer>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('users')
    .select(['id', 'email', 'full_name as name'])
    .where(sql<boolean>`id = ANY(${[...new Set(ids)]}::integer[])`)
    .execute();
  return new Map(rows.map((r) => [r.id, r]));
}
