import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { compilePaged, pageReach } from '../../src/db/compiled.ts';
import { listOwnItemsJson } from '../../src/modules/items/items.repository.ts';
import { listUserOrdersJson } from '../../src/modules/orders/orders.repository.ts';
import { buildTestApp, createUser } from '../helpers/app.ts';

const onServer = Boolean(process.env.TEST_DATABASE_URL);

describe('pages cut within a literal reach (compilePaged)', () => {
  it('reaches the page\'s end, rounded up to a power of two, and at least 64 rows', () => {
    assert.equal(pageReach(20, 0), 64);
    assert.equal(pageReach(20, 40), 64);
    assert.equal(pageReach(20, 60), 128);
    assert.equal(pageReach(100, 0), 128);
    assert.equal(pageReach(1, 0), 64);
    assert.equal(pageReach(100, 1_000_000), 2 ** 20);
    for (const [limit, offset] of [[20, 45], [7, 300], [100, 9900]]) {
      const reach = pageReach(limit, offset);
      assert.ok(reach >= limit + offset && reach / 2 < limit + offset, `${limit}, ${offset}: ${reach}`);
    }
  });

  it('compiles once per reach and cuts each call\'s page with its own limit and offset', async (t) => {
    const db = (await buildTestApp(t)).ctx.db;
    await db.insertInto('products').values(Array.from({ length: 150 }, (_, i) => ({ sku: `PG-${String(i).padStart(3, '0')}`, name: `p${i}`, price: '1.00', stock: i }))).execute();
    const texts = new Set<string>();
    const page = compilePaged((q, a: { prefix: string; limit: number; offset: number }, reach) => {
      const reached = q.selectFrom('products').select(['sku', 'stock']).where('sku', 'like', a.prefix).orderBy('stock').limit(reach).as('reached');
      const statement = q.selectFrom(reached).selectAll().orderBy('reached.stock').limit(a.limit).offset(a.offset);
      texts.add(statement.compile().sql);
      return statement;
    });
    const stocks = async (limit: number, offset: number) => (await page(db, { prefix: 'PG-%', limit, offset })).map((r) => r.stock);
    assert.deepEqual(await stocks(3, 0), [0, 1, 2]);
    assert.deepEqual(await stocks(3, 60), [60, 61, 62]);
    assert.deepEqual(await stocks(5, 62), [62, 63, 64, 65, 66], 'a page past the first reach is cut from the next');
    assert.deepEqual(await stocks(10, 145), [145, 146, 147, 148, 149]);
    assert.deepEqual(await stocks(10, 150), []);
    // the deepest page the API accepts (GET /items' skip is at most 2^31 - 1): a reach past int4
    assert.deepEqual(await stocks(100, 2 ** 31 - 1), []);
    assert.equal(texts.size, 4, [...texts].join('\n'));
    assert.ok([...texts].every((text) => /limit (64|128|256|4294967296)\)/.test(text)), [...texts].join('\n'));
  });
});

describe("a user's pages keep one generic plan however many rows the user has (PostgreSQL)", { skip: !onServer && 'needs TEST_DATABASE_URL' }, () => {
  it('plans the orders page and the items page once, for a user with 400 of each', async (t) => {
    const app = await buildTestApp(t);
    const userId = (await createUser(app, { login: false })).user.id;
    // a hundred other users with as many, placed in turn as a shop's customers place them: each
    // user's rows lie on pages of their own, and the statistics count 400 rows per user, of which a
    // plan made for the values reads the twenty of the page
    const { rows: others } = await sql<{ id: number }>`INSERT INTO users (email, full_name, password_hash)
      SELECT 'paged-' || n || '@example.com', 'Paged', 'x' FROM generate_series(1, 100) AS n RETURNING id`.execute(app.ctx.db);
    const owners = [userId, ...others.map((o) => o.id)];
    await sql`INSERT INTO orders (user_id, status, total_amount, shipping_address, created_at)
      SELECT u, 'completed', 10, '1 Plan Street', now() - n * interval '1 minute'
      FROM generate_series(1, 400) AS n CROSS JOIN unnest(${owners}::int[]) AS u ORDER BY n, u`.execute(app.ctx.db);
    await sql`INSERT INTO items (user_id, name, price)
      SELECT u, 'item ' || n, 1 FROM generate_series(1, 400) AS n CROSS JOIN unnest(${owners}::int[]) AS u ORDER BY n, u`.execute(app.ctx.db);
    await sql`ANALYZE orders`.execute(app.ctx.db);
    await sql`ANALYZE items`.execute(app.ctx.db);
    const plans = await app.ctx.db.connection().execute(async (conn) => {
      for (let i = 0; i < 12; i++) {
        const offset = (i % 3) * 20;
        const page = JSON.parse((await listUserOrdersJson(conn, 'v1', { userId, statuses: undefined, limit: 20, offset })).json) as { id: number }[];
        assert.equal(page.length, 20);
        const items = JSON.parse(await listOwnItemsJson(conn, { userId, limit: 20, offset, isActive: undefined })) as { id: number }[];
        assert.equal(items.length, 20);
      }
      const { rows } = await sql<{ statement: string; generic_plans: string; custom_plans: string }>`
        SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements
        WHERE statement LIKE '%from "orders" where "user_id"%' OR statement LIKE '%from "items" where "user_id"%'`.execute(conn);
      return rows;
    });
    assert.equal(plans.length, 2, JSON.stringify(plans));
    for (const p of plans) {
      // PostgreSQL plans the first five executions for their values, then weighs the generic plan
      assert.ok(Number(p.custom_plans) <= 5 && Number(p.generic_plans) >= 7, `${p.custom_plans} custom, ${p.generic_plans} generic: ${p.statement}`);
    }
    // the pages themselves: the newest orders first, twenty at a time
    const ids = async (offset: number) =>
      (JSON.parse((await listUserOrdersJson(app.ctx.db, 'v1', { userId, statuses: undefined, limit: 20, offset })).json) as { id: number }[]).map((o) => o.id);
    const { rows: expected } = await sql<{ id: number }>`SELECT id FROM orders WHERE user_id = ${userId} ORDER BY created_at DESC, id DESC LIMIT 20 OFFSET 380`.execute(app.ctx.db);
    assert.deepEqual(await ids(380), expected.map((r) => r.id));
  });
});
