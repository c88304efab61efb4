/** PostgreSQL's unique_violation (SQLSTATE 23505), as raised by pg and by PGlite alike. */
export function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: string } | undefined)?.code === '23505';
}

/** The database's disk is full: PostgreSQL's disk_full (53100), the system's ENOSPC, or a refused write (`StorageFull`). */
export function isStorageFull(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  return err instanceof StorageFull || e?.code === '53100' || e?.code === 'ENOSPC' || /No space left on device/.test(e?.message ?? '');
}

/** A PANIC from the database: PostgreSQL restarts its server; PGlite, in this process, cannot. */
export function isDatabasePanic(err: unknown): boolean {
  return (err as { severity?: string } | undefined)?.severity === 'PANIC';
}

/** A write refused before it was tried: the embedded disk is below its reserve, or the database just reported it full. */
export class StorageFull extends Error {
  readonly code = '53100';
  override readonly name = 'StorageFull';
}

/** True when the database (pg or PGlite) is unreachable or did not answer in time (57014): the caller gets 503, not 500. */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  if (!e) return false;
  const code = e.code ?? '';
  return (
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57014', '57P01', '57P02', '57P03', '53300', '08000', '08001', '08003', '08004', '08006'].includes(code) ||
    /Connection terminated|is not queryable|timeout exceeded when trying to connect|Query read timeout|connect ECONNREFUSED|PGlite is closed|driver has already been destroyed|not currently accepting connections|Cannot use a pool after calling end/i.test(
      e.message ?? '',
    )
  );
}
