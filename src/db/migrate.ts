import path from 'node:path';
import fs from 'node:fs/promises';
import { sql } from 'kysely';
import { DEFAULT_MIGRATION_TABLE, FileMigrationProvider, Migrator } from 'kysely/migration';
import type { Config } from '../config.ts';
import { createDatabase, type DatabaseHandle, type DatabaseOptions, type Db } from './database.ts';

/** The database holds migrations this release does not know: it was upgraded by a newer one. */
export class DataFromNewerRelease extends Error {}

/** Refuses data a newer release migrated (Kysely would call it "corrupted"): no Kysely call lists unknown applied names. */
async function refuseNewerData(db: Db, known: readonly string[]): Promise<void> {
  const { rows: [table] } = await sql<{ t: string | null }>`SELECT to_regclass(${DEFAULT_MIGRATION_TABLE})::text AS t`.execute(db);
  if (!table?.t) return;
  const { rows } = await sql<{ name: string }>`SELECT name FROM ${sql.table(DEFAULT_MIGRATION_TABLE)} ORDER BY name`.execute(db);
  const unknown = rows.map((r) => r.name).filter((name) => !known.includes(name));
  if (unknown.length > 0) {
    throw new DataFromNewerRelease(
      `data is from a newer release (migration ${unknown.join(', ')}): start that release or a newer one, or restore a backup made before the upgrade`,
    );
  }
}

/** Applies every pending migration; a failure throws with the failing migration's name and cause. */
export async function migrateToLatest(db: Db): Promise<string[]> {
  const migrator = new Migrator({
    db,
    provider: new FileMigrationProvider({ fs, path, migrationFolder: path.join(import.meta.dirname, 'migrations') }),
  });
  await refuseNewerData(db, (await migrator.getMigrations()).map((m) => m.name));
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error) {
    const name = failed ? ` (${failed.migrationName})` : '';
    throw new Error(`migration failed${name}: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** How the service connects to its database, from the configuration. */
export function databaseOptions(config: Config): DatabaseOptions {
  return {
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    applicationName: `oas-${config.role}`,
    preparedStatements: config.databasePreparedStatements,
    poolSize: config.databasePoolSize,
    sharedBuffersMb: config.embeddedSharedBuffersMb,
  };
}

/** The service's database (`existing`, or a new handle, closed when a migration fails), migrated, and the migrations applied. */
export async function openDatabase(config: Config, existing?: DatabaseHandle): Promise<{ database: DatabaseHandle; applied: string[] }> {
  const database = existing ?? (await createDatabase(databaseOptions(config)));
  try {
    return { database, applied: await migrateToLatest(database.db) };
  } catch (err) {
    if (!existing) await database.close();
    throw err;
  }
}

/** Where the database is, for the start-up log: the embedded one's directory, or the server without credentials. */
export function describeDatabase(config: Config): string {
  if (config.databaseUrl === undefined) return `embedded PostgreSQL (PGlite) in ${path.join(config.dataDir, 'pgdata')}`;
  if (config.databaseUrl === ':memory:') return 'embedded PostgreSQL (PGlite) in memory';
  const url = new URL(config.databaseUrl);
  return `PostgreSQL at ${url.hostname}:${url.port || '5432'}${url.pathname}`;
}
