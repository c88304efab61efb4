import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { loadConfig } from '../../src/config.ts';
import { buildApp } from '../../src/app.ts';

/**
 * A migrated database that every test database starts as a copy of. Creating and migrating a
 * database is most of what building a test app costs (an embedded PGlite runs initdb in WebAssembly:
 * seconds of CPU), so it is done once and copied: on PGlite the data directory is copied into the
 * test's DATA_DIR; on PostgreSQL a database is created with `CREATE DATABASE … TEMPLATE`.
 *
 * The template holds what every start-up installs: the service's migrations, pg-boss's schema with
 * the service's job indexes, and the queues; no schedule and no row of the service's tables. Its
 * name carries a hash of the source (src/) and of the PGlite and pg-boss versions, so a change there
 * makes a new one at the next run.
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const TEMPLATE_DIR = path.join(os.tmpdir(), 'oas-test-template');
const PG_PREFIX = 'oas_test_template_';

async function templateKey(): Promise<string> {
  const hash = crypto.createHash('sha256');
  // the whole of src/: migrations, pg-boss's set-up, every module's queue definitions
  const files = (await fs.readdir(path.join(root, 'src'), { recursive: true })).filter((f) => f.endsWith('.ts')).sort();
  for (const file of files) hash.update(file).update(await fs.readFile(path.join(root, 'src', file)));
  for (const pkg of ['@electric-sql/pglite', 'pg-boss']) {
    hash.update(pkg).update(await fs.readFile(path.join(root, 'node_modules', pkg, 'package.json')));
  }
  return hash.digest('hex').slice(0, 16);
}

/**
 * Starts the service once on the (new, empty) database as an API-only process, then stops it: the
 * migrations, pg-boss's schema, the job indexes and every queue are in place; an API process
 * schedules nothing and writes no row of its own.
 */
async function install(databaseUrl: string | undefined, dataDir: string): Promise<void> {
  const config = loadConfig({}, { dataDir, databaseUrl, redisUrl: undefined, logLevel: 'silent', seedDemoCatalog: false });
  // loadConfig refuses ROLE=api on PGlite files: one process only, which this is
  const app = await buildApp(Object.freeze({ ...config, role: 'api' as const }));
  await app.close();
}

async function pgliteTemplate(key: string): Promise<string> {
  const done = path.join(TEMPLATE_DIR, key);
  const pgdata = path.join(done, 'pgdata');
  if (await exists(pgdata)) {
    // in use: not stale (see removeStaleTemplates)
    await fs.utimes(done, new Date(), new Date()).catch(() => {});
    return pgdata;
  }
  await fs.mkdir(TEMPLATE_DIR, { recursive: true });
  const building = await fs.mkdtemp(path.join(TEMPLATE_DIR, `${key}.building-`));
  try {
    await install(undefined, building);
    // the finished directory appears whole or not at all; another process may have made it first
    await fs.rename(building, done).catch(async (err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err;
    });
  } finally {
    await fs.rm(building, { recursive: true, force: true });
  }
  return pgdata;
}

async function postgresTemplate(server: string, key: string): Promise<string> {
  const name = PG_PREFIX + key;
  if (await withAdmin(server, async (c) => (await c.query('select 1 from pg_database where datname = $1', [name])).rowCount === 1)) return name;
  const building = `${name}_b${process.pid}`;
  await withAdmin(server, (c) => c.query(`CREATE DATABASE ${building}`));
  try {
    const url = new URL(server);
    url.pathname = `/${building}`;
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'oas-template-'));
    await install(url.toString(), dataDir).finally(() => fs.rm(dataDir, { recursive: true, force: true }));
    await withAdmin(server, async (c) => {
      // a pool's connection may still be closing; a database is renamed (and copied) only unconnected
      await c.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1', [building]);
      // another process may have made it first: its template is as good as this one
      await c.query(`ALTER DATABASE ${building} RENAME TO ${name}`).catch((err: { code?: string }) => {
        if (err.code !== '42P04') throw err;
      });
    });
  } finally {
    await withAdmin(server, (c) => c.query(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`));
  }
  return name;
}

let template: Promise<string> | undefined;

/**
 * The template of this test run, made when missing: a PGlite data directory, or (with
 * TEST_DATABASE_URL) the name of a PostgreSQL database that nobody connects to.
 */
export function databaseTemplate(): Promise<string> {
  template ??= templateKey().then((key) => {
    const server = process.env.TEST_DATABASE_URL;
    return server ? postgresTemplate(server, key) : pgliteTemplate(key);
  });
  return template;
}

/**
 * Removes PGlite templates unused for a day: those of other migrations (or versions) are never
 * used again. (Another checkout's test run may be using a template of its own this very minute.)
 */
export async function removeStaleTemplates(): Promise<void> {
  const key = await templateKey();
  const dayAgo = Date.now() - 24 * 3600 * 1000;
  for (const entry of await fs.readdir(TEMPLATE_DIR).catch(() => [])) {
    if (entry === key) continue;
    const full = path.join(TEMPLATE_DIR, entry);
    const stat = await fs.stat(full).catch(() => undefined);
    if (stat && stat.mtimeMs < dayAgo) await fs.rm(full, { recursive: true, force: true });
  }
}

export async function withAdmin<T>(server: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: server });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

async function exists(p: string): Promise<boolean> {
  return fs.access(p).then(
    () => true,
    () => false,
  );
}
