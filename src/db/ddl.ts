import { sql, type Kysely } from 'kysely';

/**
 * Runs a block of DDL one statement at a time: PGlite's query() uses the extended protocol, which
 * takes a single statement. Statements are split on a semicolon at the end of a line, so DDL written
 * for this helper keeps one statement's end per line-ending semicolon.
 */
export async function runDdl(db: Kysely<unknown>, block: string): Promise<void> {
  const statements = block
    .split(/;\s*\n/)
    .map((s) => s.trim().replace(/;$/, ''))
    .filter(Boolean);
  for (const statement of statements) {
    await sql.raw(statement).execute(db);
  }
}
