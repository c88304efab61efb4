/** PostgreSQL's unique_violation (SQLSTATE 23505), as raised by pg and by PGlite alike. */
export function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: string } | undefined)?.code === '23505';
}
