import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pg from 'pg';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, defer, twoApps, waitFor } from '../../helpers/app.ts';

const me = { method: 'GET' as const, url: '/api/v1/auth/me' };

describe('user cache', () => {
  test('an authenticated request is served from the cache; a change through the API takes effect at once', async (t) => {
    const app = await buildTestApp(t);
    const admin = await createUser(app, { admin: true });
    const user = await createUser(app);
    assert.equal(app.ctx.userCache.enabled, true);
    assert.equal((await api(app, user, me)).statusCode, 200);
    const before = app.ctx.userCache.size;
    assert.ok(before >= 1);
    // the row really comes from memory: a second request does not read it again
    const logged: string[] = [];
    const unhook = hookQueries(app, logged);
    assert.equal((await api(app, user, me)).statusCode, 200);
    unhook();
    assert.equal(logged.filter((q) => /from "users"/i.test(q)).length, 0, logged.join('\n'));

    const patch = await api(app, admin, { method: 'PATCH', url: `/api/v1/users/${user.user.id}`, payload: { is_active: false } });
    assert.equal(patch.statusCode, 200);
    const res = await api(app, user, me);
    assert.equal(res.statusCode, 403, 'a deactivated user is refused on the very next request');
  });

  test('a change in another process reaches this one through NOTIFY', async (t) => {
    const [a, b] = await twoApps(t);
    const admin = await createUser(a, { admin: true });
    const user = await createUser(a);
    // an admin-only route: an administrator gets 404 for a user that does not exist, anyone else 403
    const adminOnly = { method: 'DELETE' as const, url: '/api/v1/users/999999999' };
    assert.equal((await api(a, user, me)).statusCode, 200);
    assert.equal((await api(a, admin, adminOnly)).statusCode, 404);
    assert.ok(a.ctx.userCache.size >= 2);

    const res = await api(b, admin, { method: 'PATCH', url: `/api/v1/users/${user.user.id}`, payload: { full_name: 'Renamed Elsewhere' } });
    assert.equal(res.statusCode, 200);
    await waitFor(async () => ((await api(a, user, me)).json<{ full_name: string }>().full_name === 'Renamed Elsewhere' ? true : undefined), 5000, 5);

    // an admin demoted by SQL loses admin rights in a
    await b.ctx.db.updateTable('users').set({ is_admin: false }).where('id', '=', admin.user.id).execute();
    await a.ctx.userCache.settle();
    assert.equal((await api(a, admin, adminOnly)).statusCode, 403);
    await b.ctx.db.updateTable('users').set({ deleted_at: new Date() }).where('id', '=', user.user.id).execute();
    await a.ctx.userCache.settle();
    assert.equal((await api(a, user, me)).statusCode, 401);
  });

  test("GET /users' totals are kept beside the rows: counted once, and right after a change here, in another process or by SQL", async (t) => {
    const [a, b] = await twoApps(t);
    const admin = await createUser(a, { admin: true });
    const list = async (query = '') => (await api(a, admin, { method: 'GET', url: `/api/v1/users?page_size=1${query}` })).json<{ total: number }>().total;
    const first = await list();
    const logged: string[] = [];
    const unhook = hookQueries(a, logged);
    assert.equal(await list(), first);
    unhook();
    assert.equal(logged.filter((q) => /count\(\*\)/i.test(q)).length, 0, 'the second list counts nothing');

    await createUser(a); // through this process: the next list counts it
    assert.equal(await list(), first + 1);
    await createUser(b); // through another process: its INSERT reaches a through NOTIFY
    await a.ctx.userCache.settle();
    assert.equal(await list(), first + 2);
    const inactive = await list('&is_active=false');
    const [row] = await b.ctx.db.insertInto('users').values({ email: `sql-${Date.now()}@example.com`, full_name: 'By SQL', password_hash: null, is_active: false }).returning('id').execute();
    await a.ctx.userCache.settle();
    assert.equal(await list('&is_active=false'), inactive + 1);
    await b.ctx.db.updateTable('users').set({ deleted_at: new Date() }).where('id', '=', row.id).execute();
    await a.ctx.userCache.settle();
    assert.equal(await list('&is_active=false'), inactive);
    assert.equal(await list(), first + 2);
  });

  test('USER_CACHE_TTL_SECONDS=0 turns the cache off', async (t) => {
    const app = await buildTestApp(t, { userCacheTtlSeconds: 0 });
    const user = await createUser(app);
    assert.equal(app.ctx.userCache.enabled, false);
    assert.equal((await api(app, user, me)).statusCode, 200);
    assert.equal(app.ctx.userCache.size, 0);
    // with no cache a change by SQL is seen by the next request, with no wait at all
    await app.ctx.db.updateTable('users').set({ is_active: false }).where('id', '=', user.user.id).execute();
    assert.equal((await api(app, user, me)).statusCode, 403);
  });

  test('an expired entry is read again', async (t) => {
    const app = await buildTestApp(t, { userCacheTtlSeconds: 0.05 });
    const user = await createUser(app);
    assert.equal((await api(app, user, me)).statusCode, 200);
    await new Promise((r) => setTimeout(r, 80));
    const logged: string[] = [];
    const unhook = hookQueries(app, logged);
    assert.equal((await api(app, user, me)).statusCode, 200);
    unhook();
    assert.equal(logged.filter((q) => /from "users"/i.test(q)).length, 1);
  });

  test('PostgreSQL: losing the change feed turns the cache off until it is back', { skip: !process.env.TEST_DATABASE_URL }, async (t) => {
    const app = await buildTestApp(t);
    const user = await createUser(app);
    assert.equal((await api(app, user, me)).statusCode, 200);
    assert.ok(app.ctx.userCache.size >= 1);
    // kill the listening backend, as a server restart or a network cut would
    const admin = new pg.Client({ connectionString: app.ctx.config.databaseUrl });
    await admin.connect();
    defer(t, () => admin.end());
    const killed = await admin.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'oas-user-feed'`,
    );
    assert.ok(killed.rowCount !== null && killed.rowCount >= 1, 'the listener backend was found');
    await waitFor(async () => (app.ctx.userCache.enabled ? undefined : true), 5000, 10);
    assert.equal(app.ctx.userCache.size, 0);
    // while the feed is down, changes are seen without any notification
    await app.ctx.db.updateTable('users').set({ full_name: 'Changed While Deaf' }).where('id', '=', user.user.id).execute();
    assert.equal((await api(app, user, me)).json<{ full_name: string }>().full_name, 'Changed While Deaf');
    await waitFor(async () => (app.ctx.userCache.enabled ? true : undefined), 10000, 50);
  });
});

/** Records the SQL the app's Kysely instance runs until the returned function is called. */
function hookQueries(app: FastifyInstance, into: string[]): () => void {
  const executor = app.ctx.db.getExecutor();
  const original = executor.executeQuery.bind(executor);
  (executor as { executeQuery: typeof original }).executeQuery = (query, ...rest) => {
    into.push(query.sql);
    return original(query, ...rest);
  };
  return () => {
    (executor as { executeQuery: typeof original }).executeQuery = original;
  };
}
