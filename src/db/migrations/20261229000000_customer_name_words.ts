import type { Kysely } from 'kysely';
import { runDdl } from '../ddl.ts';

/**
 * The order search finds a customer by the start of any word of the name (a family name), not only
 * of the whole name: the name's words, lower-cased by the `simple` configuration, in a GIN index
 * the search's `@@ to_tsquery('simple', 'word:*')` reads (issue 55).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    CREATE INDEX users_name_words_idx ON users USING gin (to_tsvector('simple', full_name));
  `);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    DROP INDEX users_name_words_idx;
  `);
}
