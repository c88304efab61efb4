import assert from 'node:assert/strict';
import { describe, it, before, after } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { api, buildTestApp, createUser, type TestUser } from '../../helpers/app.ts';

interface Page {
  items: { id: number }[];
  total: number;
  page: number;
  page_size: number;
  has_next: boolean;
  total_exact: boolean;
}

/** The administrators' lists count up to 10,000 rows, or the end of the page asked for, and say when more match. */
describe('admin list totals past 10,000 (capped count)', () => {
  let app: FastifyInstance;
  let admin: TestUser;
  let many: TestUser;
  let few: TestUser;

  before(async () => {
    app = await buildTestApp(undefined);
    admin = await createUser(app, { admin: true });
    many = await createUser(app, { login: false });
    few = await createUser(app, { login: false });
    // 10,050 orders for one user, 3 for another: one statement each, no jobs (they stay pending)
    await sql`INSERT INTO orders (user_id, status, shipping_address) SELECT ${many.user.id}, 'pending', 'x' FROM generate_series(1, 10050)`.execute(app.ctx.db);
    await sql`INSERT INTO orders (user_id, status, shipping_address) SELECT ${few.user.id}, 'failed', 'x' FROM generate_series(1, 3)`.execute(app.ctx.db);
  });
  after(() => app.close());

  const list = async (version: string, query: string) => {
    const res = await api(app, admin, { method: 'GET', url: `/api/${version}/admin/orders${query}` });
    assert.equal(res.statusCode, 200, res.body);
    return res.json<Page>();
  };

  it('says 10,000, not exact, with a next page, in v1 and v2', async () => {
    for (const version of ['v1', 'v2']) {
      const first = await list(version, '?page_size=100');
      assert.deepEqual([first.total, first.total_exact, first.has_next, first.items.length], [10000, false, true, 100], version);
    }
    // past the cap, the count reaches the end of the page asked for: 10,053 orders, page 100 ends at 10,000
    const atCap = await list('v2', '?page_size=100&page=100');
    assert.deepEqual([atCap.total, atCap.total_exact, atCap.has_next, atCap.items.length], [10000, false, true, 100]);
    const last = await list('v2', '?page_size=100&page=101');
    assert.deepEqual([last.total, last.total_exact, last.has_next, last.items.length], [10053, true, false, 53]);
    const beyond = await list('v2', '?page_size=100&page=200');
    assert.deepEqual([beyond.total, beyond.total_exact, beyond.has_next, beyond.items.length], [10053, true, false, 0]);
  });

  it('a filter under the cap is exact', async () => {
    const failed = await list('v2', '?status=failed');
    assert.deepEqual([failed.total, failed.total_exact, failed.has_next], [3, true, false]);
    const mine = await list('v1', `?user_id=${many.user.id}&page_size=100`);
    assert.deepEqual([mine.total, mine.total_exact, mine.has_next], [10000, false, true]);
    const theirs = await list('v1', `?user_id=${few.user.id}&page_size=2`);
    assert.deepEqual([theirs.total, theirs.total_exact, theirs.has_next, theirs.items.length], [3, true, true, 2]);
  });

  it('the admin users list says so too', async () => {
    const res = await api(app, admin, { method: 'GET', url: '/api/v2/admin/users?page_size=2' });
    assert.equal(res.statusCode, 200, res.body);
    const page = res.json<Page>();
    assert.deepEqual([page.total, page.total_exact, page.has_next], [3, true, true]);
  });
});
