import crypto from 'node:crypto';
import type { TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { TokenService } from '../../src/modules/auth/token.service.ts';
import { insertUser } from '../../src/modules/users/users.repository.ts';
import { buildApp, type BuildOptions } from '../../src/app.ts';
import type { Config } from '../../src/config.ts';
import { hasherOf, TEST_PASSWORD, testConfig, waitFor, type TestUser } from './app.ts';

export const REDIS_URL = process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379';

/**
 * buildApp on a fresh test database, closed when the test ends — before the test's data directory
 * and database are removed (after-hooks run in registration order).
 */
export async function securityApp(t: TestContext, overrides: Partial<Config> = {}, opts: BuildOptions = {}): Promise<FastifyInstance> {
  const holder: { app?: FastifyInstance } = {};
  t.after(() => holder.app?.close());
  // own rate-limit keys: with TEST_REDIS_URL every test app shares one Redis
  holder.app = await buildApp(await testConfig(t, { rateLimitKeyPrefix: uniquePrefix(), ...overrides }), opts);
  return holder.app;
}

/** A key prefix no other test (or run) shares. */
export function uniquePrefix(): string {
  return `test:rl:${process.pid}:${crypto.randomBytes(4).toString('hex')}`;
}

/** True when the test Redis answers; the Redis cases are skipped (with a message) otherwise. */
export async function redisAvailable(url = REDIS_URL): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, connectTimeout: 500, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.ping();
    return true;
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/**
 * A user inserted directly with tokens issued by the app's token service: no HTTP request, so
 * nothing is counted by the rate limiter. The refresh token is recorded like a login does.
 */
export async function directUser(app: FastifyInstance, opts: { admin?: boolean; password?: string } = {}): Promise<TestUser> {
  const email = `sec-${crypto.randomBytes(5).toString('hex')}@example.com`;
  const password = opts.password ?? TEST_PASSWORD;
  const user = await insertUser(app.ctx.db, {
    email,
    full_name: 'Security Test',
    password_hash: await hasherOf(app).hash(password),
    is_admin: opts.admin ?? false,
    is_active: true,
  });
  // the app's own keys: its configured secret or key, or the key pair it generated in DATA_DIR
  const tokens = await TokenService.create(app.ctx.config);
  const access = await tokens.issue(user.id, 'access');
  const refresh = await tokens.issue(user.id, 'refresh');
  await app.ctx.db.insertInto('refresh_tokens').values({ jti: refresh.jti, user_id: user.id, expires_at: refresh.expiresAt }).execute();
  return {
    user,
    email,
    password,
    token: access.token,
    refreshToken: refresh.token,
    auth: { authorization: `Bearer ${access.token}` },
  };
}

const TABLES = [
  'users',
  'refresh_tokens',
  'products',
  'orders',
  'order_items',
  'order_events',
  'items',
  'inbound_webhooks',
  'webhook_subscriptions',
  'webhook_deliveries',
] as const;

/**
 * Waits until the background work that earlier requests started has finished (orders processed,
 * inbound webhooks handled), so a snapshot compares only what the
 * request under test could have changed. (Outgoing messages are not waited for: a subscriber that
 * cannot be reached keeps its messages queued for the whole retry schedule.)
 */
async function settled(app: FastifyInstance): Promise<void> {
  await waitFor(async () => {
    const { rows } = await sql<{ busy: number }>`
      select (select count(*) from orders where status in ('pending', 'processing'))
           + (select count(*) from inbound_webhooks where status = 'received') as busy
    `.execute(app.ctx.db);
    return Number(rows[0]?.busy) === 0 ? true : undefined;
  }, 30000);
}

/**
 * Every row of the service's tables, as text: equal snapshots before and after an attack mean the
 * attack changed nothing. Tables a migration has not created yet are skipped.
 */
export async function snapshot(app: FastifyInstance): Promise<string> {
  await settled(app);
  const out: Record<string, unknown> = {};
  for (const table of TABLES) {
    try {
      const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(app.ctx.db);
      out[table] = rows.map((r) => JSON.stringify(r)).sort();
    } catch {
      out[table] = 'absent';
    }
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
