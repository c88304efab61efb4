import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { insertUser } from '../../../src/modules/users/users.repository.ts';
import { api, buildTestApp, createUser, errorBody, hasherOf, type TestUser } from '../../helpers/app.ts';

const PAGE_KEYS = ['has_next', 'items', 'page', 'page_size', 'total'];
const ITEM_KEYS = ['created_at', 'email', 'full_name', 'id', 'is_active'];

interface Page {
  items: { id: number; email: string; full_name: string; is_active: boolean; created_at: string }[];
  total: number;
  page: number;
  page_size: number;
  has_next: boolean;
}

/**
 * One database with a known population: the admin and the reader (both active), 19 more active
 * users, 5 inactive and 3 deleted ones → 26 live users, 21 active, 5 inactive.
 */
describe('GET /users (pagination and filter)', () => {
  let app: FastifyInstance;
  let reader: TestUser;
  let liveIds: number[];
  let activeIds: number[];
  let inactiveIds: number[];

  const list = async (query: string, who: TestUser | null = reader) => api(app, who, { method: 'GET', url: `/api/v1/users${query}` });
  const page = async (query: string): Promise<Page> => {
    const res = await list(query);
    assert.equal(res.statusCode, 200, `${query}: ${res.body}`);
    const body = res.json<Page>();
    assert.deepEqual(Object.keys(body).sort(), PAGE_KEYS);
    for (const item of body.items) assert.deepEqual(Object.keys(item).sort(), ITEM_KEYS);
    return body;
  };

  before(async () => {
    app = await buildTestApp(undefined);
    const admin = await createUser(app, { admin: true });
    reader = await createUser(app);
    const hash = await hasherOf(app).hash('irrelevant-password');
    const add = (i: number, extra: { is_active?: boolean; deleted_at?: Date } = {}) =>
      insertUser(app.ctx.db, { email: `member${i}@example.com`, full_name: `Member ${i}`, password_hash: hash, ...extra });
    const rows = [];
    for (let i = 0; i < 27; i++) {
      if ([4, 13, 22].includes(i)) rows.push(await add(i, { deleted_at: new Date(), is_active: false }));
      else if ([2, 7, 12, 17, 20].includes(i)) rows.push(await add(i, { is_active: false }));
      else rows.push(await add(i));
    }
    const live = [admin.user, reader.user, ...rows.filter((r) => r.deleted_at === null)];
    liveIds = live.map((u) => u.id).sort((a, b) => a - b);
    activeIds = live.filter((u) => u.is_active).map((u) => u.id).sort((a, b) => a - b);
    inactiveIds = live.filter((u) => !u.is_active).map((u) => u.id).sort((a, b) => a - b);
    assert.equal(liveIds.length, 26);
    assert.equal(inactiveIds.length, 5);
  });
  after(() => app.close());

  it('defaults to page 1 of 20, ordered by id, deleted users absent', async () => {
    const body = await page('');
    assert.equal(body.page, 1);
    assert.equal(body.page_size, 20);
    assert.equal(body.total, 26);
    assert.equal(body.has_next, true);
    assert.deepEqual(body.items.map((u) => u.id), liveIds.slice(0, 20));
    assert.ok(!body.items.some((u) => u.email.startsWith('member4@') || u.email.startsWith('member13@')));
    assert.ok(!JSON.stringify(body).includes('password'));
  });

  it('walks the pages: total and has_next are right on every page', async () => {
    const seen: number[] = [];
    for (let p = 1; p <= 6; p++) {
      const body = await page(`?page=${p}&page_size=5`);
      assert.equal(body.total, 26);
      assert.equal(body.page, p);
      assert.equal(body.page_size, 5);
      assert.equal(body.items.length, p < 6 ? 5 : 1);
      assert.equal(body.has_next, p < 6);
      seen.push(...body.items.map((u) => u.id));
    }
    assert.deepEqual(seen, liveIds);
  });

  it('has_next is false exactly when the page ends at the last user', async () => {
    assert.equal((await page('?page_size=26')).has_next, false);
    assert.equal((await page('?page_size=25')).has_next, true);
    assert.equal((await page('?page=2&page_size=13')).has_next, false);
    assert.equal((await page('?page_size=100')).items.length, 26);
  });

  it('a page beyond the last one is empty, with the true total and has_next false', async () => {
    for (const q of ['?page=3', '?page=2&page_size=100', '?page=1000000']) {
      const body = await page(q);
      assert.deepEqual(body.items, []);
      assert.equal(body.total, 26);
      assert.equal(body.has_next, false);
    }
  });

  it('filters by is_active=true and is_active=false, with totals for the filter', async () => {
    const active = await page('?is_active=true&page_size=100');
    assert.equal(active.total, 21);
    assert.deepEqual(active.items.map((u) => u.id), activeIds);
    assert.ok(active.items.every((u) => u.is_active));
    const inactive = await page('?is_active=false');
    assert.equal(inactive.total, 5);
    assert.equal(inactive.has_next, false);
    assert.deepEqual(inactive.items.map((u) => u.id), inactiveIds);
    assert.ok(inactive.items.every((u) => !u.is_active));
    const paged = await page('?is_active=true&page=2&page_size=10');
    assert.deepEqual(paged.items.map((u) => u.id), activeIds.slice(10, 20));
    assert.equal(paged.has_next, true);
  });

  it('is_active takes the usual spellings of a boolean, in any case (Python requests sends True)', async () => {
    for (const word of ['True', 'TRUE', '1', 'yes', 'on', 't']) {
      const body = await page(`?is_active=${word}&page_size=100`);
      assert.equal(body.total, 21, word);
    }
    for (const word of ['False', '0', 'no', 'OFF', 'f']) {
      const body = await page(`?is_active=${word}`);
      assert.equal(body.total, 5, word);
    }
  });

  it('invalid page, page_size or is_active is 422 VALIDATION_ERROR naming the parameter', async () => {
    const cases: [string, string][] = [
      ['?page_size=0', 'page_size'],
      ['?page_size=101', 'page_size'],
      ['?page_size=-1', 'page_size'],
      ['?page_size=abc', 'page_size'],
      ['?page_size=1.5', 'page_size'],
      ['?page=0', 'page'],
      ['?page=-3', 'page'],
      ['?page=x', 'page'],
      ['?is_active=maybe', 'is_active'],
      ['?is_active=', 'is_active'],
    ];
    for (const [q, param] of cases) {
      const res = await list(q);
      assert.equal(res.statusCode, 422, `${q}: ${res.body}`);
      const body = errorBody(res);
      assert.equal(body.error_code, 'VALIDATION_ERROR');
      assert.deepEqual((body.errors?.[0] as { loc: unknown }).loc, ['querystring', param], q);
    }
  });

  it('needs a signed-in, active user', async () => {
    const none = await list('', null);
    assert.equal(none.statusCode, 401);
    assert.equal(errorBody(none).error_code, 'NOT_AUTHENTICATED');
    const sleeper = await createUser(app, { active: false });
    const res = await list('', sleeper);
    assert.equal(res.statusCode, 403);
    assert.deepEqual(errorBody(res), { detail: 'Inactive user', error_code: 'INACTIVE_USER' });
  });

  it('the totals equal a real count of the live users after every kind of change', async () => {
    const db = app.ctx.db;
    const check = async (when: string) => {
      // the changes below are made behind the service's back: they reach its totals through the users trigger's NOTIFY
      await app.ctx.userCache.settle();
      const real = await db
        .selectFrom('users')
        .select(['is_active', (eb) => eb.fn.countAll<number>().as('n')])
        .where('deleted_at', 'is', null)
        .groupBy('is_active')
        .execute();
      for (const flag of [true, false]) {
        const expected = Number(real.find((r) => r.is_active === flag)?.n ?? 0);
        assert.equal((await page(`?page_size=1&is_active=${flag}`)).total, expected, `${when}: is_active=${flag}`);
      }
      const all = await page('?page_size=1');
      assert.equal(all.total, Number(real.reduce((a, r) => a + Number(r.n), 0)), `${when}: GET /users total`);
    };
    await check('initially');
    const bulk = await db
      .insertInto('users')
      .values(Array.from({ length: 40 }, (_, i) => ({ email: `bulk-${i}-${Date.now()}@example.com`, full_name: 'Bulk', password_hash: null, is_active: i % 4 !== 0 })))
      .returning('id')
      .execute();
    await check('after a multi-row insert');
    await db.updateTable('users').set({ is_active: false }).where('id', 'in', bulk.slice(0, 20).map((r) => r.id)).execute();
    await check('after a multi-row update of mixed rows');
    await db.updateTable('users').set({ deleted_at: new Date() }).where('id', 'in', bulk.map((r) => r.id)).execute();
    await check('after a multi-row soft delete');
    // tokens issued without a sign-in: only the refresh token refers to the user, and goes before the hard delete
    const u = await createUser(app, { login: false });
    await check('after insert');
    await db.updateTable('users').set({ is_active: false }).where('id', '=', u.user.id).execute();
    await check('after deactivation');
    await db.updateTable('users').set({ full_name: 'Renamed' }).where('id', '=', u.user.id).execute();
    await check('after an unrelated update');
    await db.updateTable('users').set({ is_active: true }).where('id', '=', u.user.id).execute();
    await check('after reactivation');
    await db.updateTable('users').set({ deleted_at: new Date(), is_active: false }).where('id', '=', u.user.id).execute();
    await check('after soft delete');
    await db.deleteFrom('refresh_tokens').where('user_id', '=', u.user.id).execute();
    await db.deleteFrom('users').where('id', '=', u.user.id).execute();
    await check('after hard delete of a deleted user');
    const v = await createUser(app, { login: false });
    await db.deleteFrom('refresh_tokens').where('user_id', '=', v.user.id).execute();
    await db.deleteFrom('users').where('id', '=', v.user.id).execute();
    await check('after hard delete of a live user');
  });
});
