/** PostgreSQL's unique_violation (SQLSTATE 23505), as raised by pg and by PGlite alike. */
export function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: string } | undefined)?.code === '23505';
}

/**
 * The disk under the database is full: PostgreSQL's disk_full (SQLSTATE 53100), the operating
 * system's ENOSPC, or a write refused for want of room (`StorageFull`).
 */
export function isStorageFull(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  return err instanceof StorageFull || e?.code === '53100' || e?.code === 'ENOSPC' || /No space left on device/.test(e?.message ?? '');
}

/** A PANIC from the database: PostgreSQL restarts its server; PGlite, in this process, cannot. */
export function isDatabasePanic(err: unknown): boolean {
  return (err as { severity?: string } | undefined)?.severity === 'PANIC';
}

/**
 * A write refused before it was tried: the embedded database's disk has less free than its reserve
 * (`StorageState`, db/storage.ts), or the database reported its disk full a moment ago.
 */
export class StorageFull extends Error {
  readonly code = '53100';

  constructor(detail: string) {
    super(detail);
    this.name = 'StorageFull';
  }
}

/** True when the database (pg or PGlite) is unreachable: the caller gets 503, not 500. */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  if (!e) return false;
  const code = e.code ?? '';
  return (
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P01', '57P02', '57P03', '53300', '08000', '08001', '08003', '08004', '08006'].includes(code) ||
    /Connection terminated|is not queryable|timeout exceeded when trying to connect|Query read timeout|connect ECONNREFUSED|PGlite is closed|driver has already been destroyed|not currently accepting connections|Cannot use a pool after calling end/i.test(
      e.message ?? '',
    )
  );
}
