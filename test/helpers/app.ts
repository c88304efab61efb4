import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, type TestContext } from 'node:test';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import type { JobWithMetadata } from 'pg-boss';
import { sql } from 'kysely';
import { buildApp, type BuildOptions } from '../../src/app.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { createDatabase } from '../../src/db/database.ts';
import { databaseOptions } from '../../src/db/migrate.ts';
import { TokenService } from '../../src/modules/auth/token.service.ts';
import { PasswordHasher } from '../../src/modules/users/passwords.ts';
import { insertUser } from '../../src/modules/users/users.repository.ts';
import type { UserRow } from '../../src/db/schema.ts';
import { databaseTemplate, withAdmin } from './database-template.ts';

const execFileAsync = promisify(execFile);

export const TEST_PASSWORD = 'correct-horse-battery';

const cleanups = new WeakMap<TestContext, (() => Promise<unknown>)[]>();
/** cleanups of what a suite built without a test context (in its `before`): run when the file's tests end */
const fileCleanups: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const f of fileCleanups.reverse()) await f();
});

/**
 * Registers `fn` to run when the test ends, last registered first (like `defer`): an app is closed
 * before its data directory and database are removed. node:test runs its own `after` hooks in
 * registration order, which would remove the directory under a still-running job.
 */
export function defer(t: TestContext | undefined, fn: () => Promise<unknown>): void {
  if (!t) {
    fileCleanups.push(fn);
    return;
  }
  let stack = cleanups.get(t);
  if (!stack) {
    const fresh: (() => Promise<unknown>)[] = [];
    cleanups.set(t, fresh);
    t.after(async () => {
      for (const f of fresh.reverse()) await f();
    });
    stack = fresh;
  }
  stack.push(fn);
}

/**
 * A fresh database per call, a copy of the migrated template (test/helpers/database-template.ts):
 * embedded PGlite files in `dataDir` (the URL is then undefined) by default; with TEST_DATABASE_URL,
 * a new database on that server (dropped afterwards).
 */
async function freshDatabaseUrl(t: TestContext | undefined, dataDir: string, empty: boolean): Promise<string | undefined> {
  const template = empty ? undefined : await databaseTemplate();
  const server = process.env.TEST_DATABASE_URL;
  if (!server) {
    // no files: the embedded database is created (initdb) in the data directory on first use
    if (template) await copyDir(template, path.join(dataDir, 'pgdata'));
    return undefined;
  }
  const name = `oas_test_${process.pid}_${crypto.randomBytes(4).toString('hex')}`;
  await withAdmin(server, (c) => c.query(template ? `CREATE DATABASE ${name} TEMPLATE ${template}` : `CREATE DATABASE ${name}`));
  defer(t, () => withAdmin(server, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).catch(() => {}));
  const url = new URL(server);
  url.pathname = `/${name}`;
  return url.toString();
}

/** `cp -R` (a fifth of fs.cp's CPU for the ~1,000 files of a data directory), fs.cp where there is none. */
async function copyDir(from: string, to: string): Promise<void> {
  try {
    await execFileAsync('cp', ['-R', from, to]);
  } catch {
    await fs.rm(to, { recursive: true, force: true });
    await fs.cp(from, to, { recursive: true });
  }
}

/**
 * The configuration of a test app: its own DATA_DIR and database (a copy of the migrated template;
 * with `emptyDatabase`, one that nothing has touched yet), cheap bcrypt, limits out of the way.
 */
export async function testConfig(t: TestContext | undefined, overrides: Partial<Config> = {}, opts: { emptyDatabase?: boolean } = {}): Promise<Config> {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'oas-test-'));
  defer(t, () => fs.rm(dataDir, { recursive: true, force: true }));
  // on PGlite, an app given another app's DATA_DIR gets an in-memory database, not the other's files
  const sharesDir = overrides.dataDir !== undefined && !process.env.TEST_DATABASE_URL;
  const databaseUrl = 'databaseUrl' in overrides ? overrides.databaseUrl : sharesDir ? ':memory:' : await freshDatabaseUrl(t, dataDir, opts.emptyDatabase ?? false);
  // A role of its own on PGlite: the test's copied database files serve this one process alone,
  // which loadConfig cannot know of a data directory (it allows that only for ':memory:').
  const roleOnFiles = databaseUrl === undefined && overrides.role !== undefined && overrides.role !== 'all';
  const config = loadConfig(
    {},
    {
      dataDir,
      redisUrl: process.env.TEST_REDIS_URL || undefined,
      bcryptRounds: 4,
      // a test's database holds a few hundred rows: a small pool starts in a third of the time
      embeddedSharedBuffersMb: 16,
      // on a server two batches run at once, and a test may run several apps: at the default pool
      // sizes (20, and 10 for pg-boss) their connections reached PostgreSQL's 100 ('too many clients')
      databasePoolSize: 10,
      jobQueuePoolSize: 4,
      logLevel: process.env.TEST_LOG_LEVEL ?? 'silent',
      // retries and delayed jobs come due within a test's patience
      jobPollingSeconds: 0.5,
      rateLimitAuthenticated: 100000,
      rateLimitAnonymous: 100000,
      rateLimitWebhook: 100000,
      // tests that repeat failed sign-ins for one e-mail set their own limit
      loginThrottleMaxFailures: 100000,
      seedDemoCatalog: false,
      webhookAllowPrivateTargets: true,
      ...overrides,
      databaseUrl,
      ...(roleOnFiles ? { role: 'all' } : {}),
    },
  );
  return roleOnFiles ? Object.freeze({ ...config, role: overrides.role! }) : config;
}

/** Builds the whole app on a fresh migrated database; closed when the test (or suite) ends. */
export async function buildTestApp(t: TestContext | undefined, overrides: Partial<Config> = {}, opts: BuildOptions = {}): Promise<FastifyInstance> {
  // own rate-limit keys: with TEST_REDIS_URL every test app shares one Redis
  const config = await testConfig(t, { rateLimitKeyPrefix: uniquePrefix(), ...overrides });
  const app = await buildApp(config, opts);
  defer(t, () => app.close());
  return app;
}

/**
 * Two API processes' worth of the service on one database: two pools on PostgreSQL
 * (TEST_DATABASE_URL), one shared embedded instance on PGlite. Each has its own user cache, fed by
 * the users trigger's NOTIFY. Closed when the test (or suite) ends.
 */
export async function twoApps(t: TestContext | undefined, overrides: Partial<Config> = {}): Promise<[FastifyInstance, FastifyInstance]> {
  const config = await testConfig(t, overrides);
  if (config.databaseUrl) {
    const a = await buildApp(config);
    defer(t, () => a.close());
    const b = await buildApp(config);
    defer(t, () => b.close());
    return [a, b];
  }
  const database = await createDatabase(databaseOptions(config));
  defer(t, () => database.close());
  const a = await buildApp(config, { database });
  defer(t, () => a.close());
  const b = await buildApp(config, { database });
  defer(t, () => b.close());
  return [a, b];
}

export interface TestUser {
  user: UserRow;
  email: string;
  password: string;
  token: string;
  refreshToken: string;
  auth: { authorization: string };
}

let counter = 0;

const hashers = new WeakMap<FastifyInstance, PasswordHasher>();
/** A password hasher with the app's bcrypt cost. */
export function hasherOf(app: FastifyInstance): PasswordHasher {
  let hasher = hashers.get(app);
  if (!hasher) {
    hasher = new PasswordHasher(app.ctx.config.bcryptRounds);
    hashers.set(app, hasher);
  }
  return hasher;
}

/**
 * Inserts a user directly (fast: no HTTP, no welcome job) and signs it in through the API; with
 * `login: false`, its tokens are issued by the app's token service instead (no HTTP request, so
 * nothing is counted by the rate limiter or the sign-in throttle), the refresh token recorded like a
 * login does.
 */
export async function createUser(
  app: FastifyInstance,
  opts: { admin?: boolean; active?: boolean; email?: string; password?: string; fullName?: string; login?: boolean } = {},
): Promise<TestUser> {
  const email = opts.email ?? `user${++counter}-${crypto.randomBytes(3).toString('hex')}@example.com`;
  const password = opts.password ?? TEST_PASSWORD;
  const user = await insertUser(app.ctx.db, {
    email,
    full_name: opts.fullName ?? `Test User ${counter}`,
    password_hash: await hasherOf(app).hash(password),
    is_admin: opts.admin ?? false,
    is_active: true,
  });
  const body = opts.login === false ? await issueTokens(app, user.id) : await login(app, email, password);
  if (opts.active === false) {
    await app.ctx.db.updateTable('users').set({ is_active: false }).where('id', '=', user.id).execute();
    user.is_active = false;
  }
  return {
    user,
    email,
    password,
    token: body.access_token,
    refreshToken: body.refresh_token,
    auth: { authorization: `Bearer ${body.access_token}` },
  };
}

async function login(app: FastifyInstance, email: string, password: string): Promise<{ access_token: string; refresh_token: string }> {
  const res = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username: email, password } });
  if (res.statusCode !== 200) throw new Error(`login failed: ${res.statusCode} ${res.body}`);
  return res.json<{ access_token: string; refresh_token: string }>();
}

/** Tokens from the app's own keys (its configured secret or key, or the key pair it generated in DATA_DIR). */
async function issueTokens(app: FastifyInstance, userId: number): Promise<{ access_token: string; refresh_token: string }> {
  const tokens = await TokenService.create(app.ctx.config);
  const access = await tokens.issue(userId, 'access');
  const refresh = await tokens.issue(userId, 'refresh');
  await app.ctx.db.insertInto('refresh_tokens').values({ jti: refresh.jti, user_id: userId, expires_at: refresh.expiresAt }).execute();
  return { access_token: access.token, refresh_token: refresh.token };
}

/** app.inject with a bearer token. */
export function api(app: FastifyInstance, who: TestUser | null, opts: InjectOptions): Promise<LightMyRequestResponse> {
  const headers = { ...(opts.headers ?? {}), ...(who ? who.auth : {}) };
  return app.inject({ ...opts, headers } as InjectOptions) as Promise<LightMyRequestResponse>;
}

/** Polls until `check` returns a value (not undefined) or the timeout passes. */
export async function waitFor<T>(check: () => Promise<T | undefined>, timeoutMs = 15000, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`waitFor: condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * Waits until a session on the app's database (PostgreSQL) waits for a lock (`wait_event_type =
 * 'Lock'` in pg_stat_activity; `event`, e.g. 'advisory' or 'transactionid', narrows it): the state
 * in which a test that claims a statement is held back by a lock can assert what it holds back.
 */
export async function untilWaitingForLock(app: FastifyInstance, event?: string): Promise<void> {
  await waitFor(async () => {
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock' ${event === undefined ? sql`` : sql`and wait_event = ${event}`}
    `.execute(app.ctx.db);
    return rows[0]!.n > 0 ? true : undefined;
  });
}

/** Asserts the spec's error shape and returns the body. */
export function errorBody(res: LightMyRequestResponse): { detail: string; error_code: string; errors?: unknown[] } {
  const body = res.json<{ detail: string; error_code: string; errors?: unknown[] }>();
  if (typeof body.detail !== 'string' || typeof body.error_code !== 'string') {
    throw new Error(`not an error body: ${res.body}`);
  }
  return body;
}

export const REDIS_URL = process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379';

/** A key prefix no other test (or run) shares. */
export function uniquePrefix(): string {
  return `test:rl:${process.pid}:${crypto.randomBytes(4).toString('hex')}`;
}

/**
 * True when the test Redis answers; the Redis cases are skipped (with a message) otherwise — but
 * not in CI (CI set) or when TEST_REDIS_URL names a Redis: there a Redis that does not answer is an
 * error, so the run fails instead of passing without the cases it was meant to run.
 */
export async function redisAvailable(url = REDIS_URL): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, connectTimeout: 500, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.ping();
    return true;
  } catch (err) {
    if (process.env.CI || process.env.TEST_REDIS_URL) {
      throw new Error(`no Redis at ${url} (${process.env.CI ? 'CI is set' : 'TEST_REDIS_URL is set'}): ${String(err)}`, { cause: err });
    }
    return false;
  } finally {
    client.disconnect();
  }
}

/**
 * The jobs pg-boss keeps (read through its API), per queue a request can give work to: not the
 * queues the clock sends to (cron schedules) and not pg-boss's own (`__pgboss__…`).
 */
async function requestJobs(app: FastifyInstance): Promise<Map<string, JobWithMetadata[]>> {
  const boss = app.ctx.queue.boss;
  const scheduled = new Set((await boss.getSchedules()).map((s) => s.name));
  const queues = (await boss.getQueues()).map((q) => q.name).filter((n) => !scheduled.has(n) && !n.startsWith('__pgboss__'));
  assert.ok(queues.includes('order-process'), "pg-boss lists the service's queues");
  const out = new Map<string, JobWithMetadata[]>();
  for (const queue of queues.sort()) out.set(queue, await boss.findJobs(queue));
  return out;
}

/**
 * Waits until the background work that earlier requests started has finished (orders processed,
 * inbound webhooks handled, order events published, and every job running or due now, outgoing
 * messages' delivery attempts included, run), so a snapshot compares only what the request under
 * test could have changed. A message's later retries are not waited for: a subscriber that cannot
 * be reached keeps its messages queued for the whole retry schedule, so a test that snapshots
 * around subscriptions it cannot reach sets a schedule that starts after it ends.
 */
async function settled(app: FastifyInstance): Promise<void> {
  await waitFor(async () => {
    const { rows } = await sql<{ busy: number }>`
      select (select count(*) from orders where status in ('pending', 'processing'))
           + (select count(*) from inbound_webhooks where status = 'received')
           + (select count(*) from order_events where not published) as busy
    `.execute(app.ctx.db);
    if (Number(rows[0]?.busy) !== 0) return undefined;
    const now = Date.now();
    const due = (j: JobWithMetadata) => j.state === 'active' || ((j.state === 'created' || j.state === 'retry') && new Date(j.startAfter).getTime() <= now);
    return [...(await requestJobs(app)).values()].some((jobs) => jobs.some(due)) ? undefined : true;
  }, 30000);
}

/**
 * Every row of every table of the service (the public schema's tables, as the catalog lists them)
 * and every job a request can have sent (requestJobs), as text: equal snapshots before and after an
 * attack mean the attack changed nothing. A failing query fails the test.
 */
export async function snapshot(app: FastifyInstance): Promise<string> {
  await settled(app);
  const out: Record<string, unknown> = {};
  const tables = await sql<{ name: string }>`
    select table_name as name from information_schema.tables
    where table_schema = 'public' and table_type = 'BASE TABLE' order by table_name
  `.execute(app.ctx.db);
  assert.ok(tables.rows.some((t) => t.name === 'users'), "the catalog lists the service's tables");
  for (const { name } of tables.rows) {
    const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(name)}`.execute(app.ctx.db);
    out[name] = rows.map((r) => JSON.stringify(r)).sort();
  }
  for (const [queue, jobs] of await requestJobs(app)) {
    out[`job:${queue}`] = jobs.map((j) => JSON.stringify({ id: j.id, state: j.state, data: j.data, retryCount: j.retryCount })).sort();
  }
  return JSON.stringify(out);
}

/** Collects the app's JSON log lines (pass as buildApp's logStream). */
export class LogCapture {
  readonly lines: string[] = [];
  write(msg: string): void {
    this.lines.push(msg);
  }
  get text(): string {
    return this.lines.join('');
  }
  parsed(): Record<string, unknown>[] {
    return this.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  }
}
