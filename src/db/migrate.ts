import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fs from 'node:fs/promises';
import { FileMigrationProvider, Migrator } from 'kysely/migration';
import type { Config } from '../config.ts';
import { createDatabase, type DatabaseHandle, type DatabaseOptions, type Db } from './database.ts';

const migrationFolder = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');

/** Applies every pending migration; throws with the failing migration's name and cause. */
export async function migrateToLatest(db: Db): Promise<string[]> {
  const migrator = new Migrator({
    db,
    provider: new FileMigrationProvider({ fs, path, migrationFolder }),
  });
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

/**
 * The service's database, migrated: `existing` when given (closed by its owner), else a new handle
 * with the service's connection settings (closed again when a migration fails); and the names of
 * the migrations this call applied.
 */
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
