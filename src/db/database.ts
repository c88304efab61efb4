import path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { Kysely, PGliteDialect, PostgresDialect, sql, type Dialect } from 'kysely';
import pg from 'pg';
import { lockDataDir } from './data-dir-lock.ts';
import { createEmbeddedDataDir } from './embedded-init.ts';
import { namedStatementPool } from './named-statements.ts';
import { StorageState, watchForPanic } from './storage.ts';
import type { Database } from './schema.ts';

// int8 (count(*), bigint) as a JS number: every count here is far below 2^53.
pg.types.setTypeParser(20, (v) => Number(v));
// timestamptz on PGlite: pg-types' parser, as node-pg's; PGlite's own misreads year 0099, BC and offsets with seconds
const PGLITE_PARSERS = { [pg.types.builtins.TIMESTAMPTZ]: pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ) };

export type Db = Kysely<Database>;

export interface DatabaseHandle {
  readonly db: Db;
  /** the PGlite instance when embedded (pg-boss shares it), else undefined */
  readonly pglite: PGlite | undefined;
  readonly connectionString: string | undefined;
  /** whether the database has room to write (a full disk: 503 STORAGE_FULL, not a wedged process) */
  readonly storage: StorageState;
  /** throws when the database cannot answer, or (StorageFull) cannot write */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  databaseUrl: string | undefined;
  dataDir: string;
  poolSize?: number;
  /** named prepared statements (src/db/named-statements.ts); default true */
  preparedStatements?: boolean;
  /** PGlite's shared_buffers in MiB (default 16: one process's working set) */
  sharedBuffersMb?: number;
  /** shown in pg_stat_activity (the service uses oas-<role>) */
  applicationName?: string;
  /** how room to write is judged (default: the embedded data directory's free space; nothing to measure on PostgreSQL) */
  storage?: StorageState;
}

/** PostgreSQL via pg.Pool when a URL is given; otherwise embedded PGlite (':memory:' for tests). */
export async function createDatabase(opts: DatabaseOptions): Promise<DatabaseHandle> {
  if (opts.databaseUrl && opts.databaseUrl !== ':memory:') {
    const pool = new pg.Pool({
      connectionString: opts.databaseUrl,
      application_name: opts.applicationName,
      max: opts.poolSize ?? 20,
      connectionTimeoutMillis: 5000,
      // the server cancels a statement past 15 s, a lock wait too (57014: 503); pg's per-query timer cost 5-7 % of a list read (decision 153)
      statement_timeout: 15000,
      idleTimeoutMillis: 30000,
    });
    // A client losing its server emits 'error' (on the pool when idle, on itself when checked out);
    // unheard, it would crash the process. The caller learns of it from its next query.
    pool.on('error', () => {});
    pool.on('connect', (client) => client.on('error', () => {}));
    const dialect = new PostgresDialect({ pool: namedStatementPool(pool, opts.preparedStatements !== false) });
    return handleOf(dialect, undefined, opts.databaseUrl, opts.storage);
  }
  // loaded only here: a process on PostgreSQL never holds the embedded database's code
  const { PGlite } = await import('@electric-sql/pglite');
  // PostgreSQL zeroes its whole shared buffer pool at start: it is resident from the first query on
  const startParams = [...PGlite.defaultStartParams, '-c', `shared_buffers=${opts.sharedBuffersMb ?? 16}MB`];
  if (opts.databaseUrl === ':memory:') {
    const pglite = await PGlite.create({ startParams, parsers: PGLITE_PARSERS });
    return handleOf(new PGliteDialect({ pglite }), pglite, undefined, opts.storage);
  }
  // one process per data directory, taken before anything in it is opened
  const lock = await lockDataDir(opts.dataDir);
  const dir = path.join(opts.dataDir, 'pgdata');
  try {
    await createEmbeddedDataDir(dir, startParams);
    const pglite = watchForPanic(await PGlite.create(dir, { startParams, parsers: PGLITE_PARSERS }));
    return handleOf(new PGliteDialect({ pglite }), pglite, undefined, opts.storage ?? new StorageState(dir), () => lock.release());
  } catch (err) {
    await lock.release();
    throw err;
  }
}

function handleOf(dialect: Dialect, pglite: PGlite | undefined, connectionString: string | undefined, storage = new StorageState(undefined), release?: () => Promise<void>): DatabaseHandle {
  const db = new Kysely<Database>({ dialect });
  return {
    db,
    pglite,
    connectionString,
    storage,
    async ping() {
      storage.check();
      await sql`select 1`.execute(db);
    },
    async close() {
      await db.destroy();
      await release?.();
    },
  };
}
