import { sql, type Kysely } from 'kysely';

/** Runs DDL split on line-ending semicolons, one statement at a time (PGlite's query() takes one). */
export async function runDdl(db: Kysely<unknown>, block: string): Promise<void> {
  const statements = block
    .split(/;\s*\n/)
    .map((s) => s.trim().replace(/;$/, ''))
    .filter(Boolean);
  for (const statement of statements) {
    await sql.raw(statement).execute(db);
  }
}
