/** PostgreSQL's unique_violation (SQLSTATE 23505), as raised by pg and by PGlite alike. */
export function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: string } | undefined)?.code === '23505';
}

/**
 * PostgreSQL's deadlock_detected (40P01) and serialization_failure (40001): the whole transaction
 * was rolled back, and running it again can succeed.
 */
export function isRetryableConflict(err: unknown): boolean {
  const code = (err as { code?: string } | undefined)?.code;
  return code === '40P01' || code === '40001';
}
