import fs from 'node:fs';
import type { PGlite } from '@electric-sql/pglite';
import { StorageFull, isDatabasePanic, isStorageFull } from './errors.ts';

/** Room kept free: one 16 MiB WAL segment and a margin, as PGlite cannot survive a failed WAL write (decision 107). */
const EMBEDDED_RESERVE_BYTES = 24 * 1024 * 1024;

/** How long a disk-full error of the database keeps /ready at 503 (PostgreSQL: nothing to measure). */
const REPORTED_FULL_MS = 10_000;

/** Whether the database has room to write: the embedded one's free space, and disk-full errors seen. */
export class StorageState {
  private lastFull = Number.NEGATIVE_INFINITY;
  private readonly dir: string | undefined;
  private readonly reserveBytes: number;

  /** `dir`: the embedded database's directory, whose file system is measured; none on PostgreSQL */
  constructor(dir: string | undefined, reserveBytes = EMBEDDED_RESERVE_BYTES) {
    this.dir = dir;
    this.reserveBytes = reserveBytes;
  }

  /** Throws `StorageFull` when the embedded database's disk has less than its reserve free (statfs is cheap: uncached). */
  assertRoomToWrite(): void {
    if (this.dir === undefined) return;
    const stat = fs.statfsSync(this.dir);
    const free = stat.bavail * stat.bsize;
    if (free < this.reserveBytes) {
      throw new StorageFull(`the disk of the database is full (${mib(free)} free, ${mib(this.reserveBytes)} kept in reserve)`);
    }
  }

  /** Takes note of a failed statement: a disk-full one makes `check` fail for a while. */
  noteError(err: unknown): void {
    if (isStorageFull(err)) this.lastFull = Date.now();
  }

  /** For /ready: throws `StorageFull` while writes cannot succeed, as far as can be told. */
  check(): void {
    this.assertRoomToWrite();
    if (Date.now() - this.lastFull < REPORTED_FULL_MS) throw new StorageFull('the disk of the database is full');
  }
}

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/** `pglite`, exiting at the first PANIC before its caller learns of it: the next statement would spin, blocking for good. */
export function watchForPanic(pglite: PGlite): PGlite {
  const watch = (err: unknown) => {
    if (!isDatabasePanic(err)) return;
    fs.writeSync(2, `the embedded database stopped after a PANIC (${(err as Error).message}): exiting so that a restart recovers it\n`);
    process.exit(1);
  };
  const watched = <T extends object>(target: T, methods: ReadonlySet<PropertyKey>, wrapArgs?: (args: unknown[]) => unknown[]): T =>
    new Proxy(target, {
      get(obj, prop) {
        const value: unknown = Reflect.get(obj, prop, obj);
        if (typeof value !== 'function') return value;
        const bound = (value as (...args: unknown[]) => unknown).bind(obj);
        if (!methods.has(prop)) return bound;
        return (...args: unknown[]) => {
          const result = bound(...(wrapArgs ? wrapArgs(args) : args));
          // the first handler of the rejection: it runs before the caller's
          if (result instanceof Promise) result.catch(watch);
          return result;
        };
      },
    });
  const statements = new Set<PropertyKey>(['query', 'exec']);
  return watched(pglite, new Set([...statements, 'transaction']), (args) =>
    typeof args[0] === 'function'
      ? [(tx: object) => (args[0] as (tx: object) => unknown)(watched(tx, statements)), ...args.slice(1)]
      : args,
  );
}
