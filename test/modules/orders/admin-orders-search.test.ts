import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { api, buildTestApp, createUser, errorBody, type TestUser } from '../../helpers/app.ts';
import { createProduct } from '../../helpers/products.ts';
import { pendingOrder } from './cancel.helpers.ts';

interface Page {
  items: { id: number; user_id: number; status: string; customer?: { id: number; email: string; name: string } }[];
  total: number;
}

describe('GET /api/v2/admin/orders?q= (search) and each item\'s customer', () => {
  let app: FastifyInstance;
  let admin: TestUser;
  let ada: TestUser;
  let grace: TestUser;
  let percent: TestUser;
  let underscore: TestUser;
  const orders = new Map<TestUser, number[]>();

  const list = async (query: string, version = 'v2') => {
    const res = await api(app, admin, { method: 'GET', url: `/api/${version}/admin/orders${query}` });
    assert.equal(res.statusCode, 200, `${query}: ${res.body}`);
    return res.json<Page>();
  };
  const ids = async (q: string) => (await list(`?q=${encodeURIComponent(q)}`)).items.map((o) => o.id);
  const newestFirst = (...who: TestUser[]) => who.flatMap((u) => orders.get(u) ?? []).sort((a, b) => b - a);

  before(async () => {
    app = await buildTestApp(undefined);
    admin = await createUser(app, { admin: true, login: false });
    ada = await createUser(app, { email: 'Ada.Lovelace@Analytical.example', fullName: 'Ada Lovelace', login: false });
    grace = await createUser(app, { email: 'rear.admiral@navy.example', fullName: 'Grace Hopper', login: false });
    percent = await createUser(app, { email: 'p1@example.com', fullName: '100% Cotton', login: false });
    underscore = await createUser(app, { email: 'a_b@example.com', fullName: 'Underscore', login: false });
    // a name LIKE's wildcards would match: `100x…` for `100%`, `axb` for `a_b`
    await createUser(app, { email: 'axb@example.com', fullName: '100x Cotton', login: false });
    const product = await createProduct(app, { stock: 100 });
    for (const who of [ada, grace, ada, percent, underscore]) {
      const order = await pendingOrder(app, who, [{ productId: product.id, quantity: 1 }]);
      orders.set(who, [...(orders.get(who) ?? []), order.id]);
    }
  });

  it('an order number finds that order; a number no order has finds none', async () => {
    const [id] = orders.get(grace)!;
    assert.deepEqual(await ids(String(id)), [id]);
    assert.deepEqual(await ids(` ${id} `), [id]);
    assert.deepEqual(await ids('999999'), []);
    assert.deepEqual(await ids('99999999999999999999'), []);
  });

  it("the start of the customer's e-mail or name, in any case, finds their orders newest first", async () => {
    assert.deepEqual(await ids('ada.lovelace@ANALYTICAL'), newestFirst(ada));
    assert.deepEqual(await ids('ada'), newestFirst(ada));
    assert.deepEqual(await ids('grace h'), newestFirst(grace));
    assert.deepEqual(await ids('REAR.ADMIRAL@navy.example'), newestFirst(grace));
    // a prefix, not any part
    assert.deepEqual(await ids('opper'), []);
    assert.deepEqual(await ids('nobody'), []);
  });

  it('the start of words of the name finds their orders: a family name, words in any order', async () => {
    assert.deepEqual(await ids('hopper'), newestFirst(grace));
    assert.deepEqual(await ids('LOVE'), newestFirst(ada));
    assert.deepEqual(await ids('ho gr'), newestFirst(grace));
    assert.deepEqual(await ids('  lovelace   ada '), newestFirst(ada));
    // every word must start one of the name's
    assert.deepEqual(await ids('hopper ada'), []);
    assert.deepEqual(await ids('cotton'), newestFirst(percent));
  });

  it("LIKE's wildcards in the text stand for themselves", async () => {
    assert.deepEqual(await ids('100%'), newestFirst(percent));
    assert.deepEqual(await ids('a_b'), newestFirst(underscore));
    assert.deepEqual(await ids('%'), []);
  });

  it('combines with the other filters', async () => {
    const page = await list('?q=ada&status=pending&page_size=1');
    assert.deepEqual([page.items.map((o) => o.id), page.total], [[newestFirst(ada)[0]], 2]);
    assert.deepEqual((await list('?q=ada&status=completed')).items, []);
    assert.deepEqual((await list(`?q=ada&user_id=${grace.user.id}`)).items, []);
  });

  it('each v2 item names its customer; v1 items do not', async () => {
    const page = await list('?q=grace');
    assert.deepEqual(page.items[0].customer, { id: grace.user.id, email: 'rear.admiral@navy.example', name: 'Grace Hopper' });
    const all = await list('?page_size=100');
    assert.ok(all.items.every((o) => o.customer?.id === o.user_id));
    const v1 = await list('?page_size=100', 'v1');
    assert.ok(v1.items.length > 0 && v1.items.every((o) => !('customer' in o)));
  });

  it('a prefix more than 1,000 customers share, or one combined with user_id, finds the same orders', async () => {
    const { rows } = await sql<{ id: number }>`
      INSERT INTO users (email, full_name, password_hash) SELECT 'crowd' || g || '@example.com', 'Crowd ' || g, 'x' FROM generate_series(1, 1001) AS g RETURNING id
    `.execute(app.ctx.db);
    const product = await createProduct(app, { stock: 10 });
    const placed: number[] = [];
    for (const row of [rows[0], rows[1000]]) {
      const owner = { user: { id: row.id } } as TestUser;
      placed.unshift((await pendingOrder(app, owner, [{ productId: product.id, quantity: 1 }])).id);
    }
    assert.deepEqual(await ids('crowd'), placed);
    assert.deepEqual(await ids('CROWD 1001'), [placed[0]]);
    assert.deepEqual((await list(`?q=crowd&user_id=${rows[1000].id}`)).items.map((o) => o.id), [placed[0]]);
    assert.deepEqual((await list(`?q=ada&user_id=${rows[1000].id}`)).items, []);
  });

  it('422 VALIDATION_ERROR for an empty, blank or too long q', async () => {
    for (const q of ['', '   ', 'x'.repeat(201)]) {
      const res = await api(app, admin, { method: 'GET', url: `/api/v2/admin/orders?q=${encodeURIComponent(q)}` });
      assert.equal(res.statusCode, 422, `${JSON.stringify(q)}: ${res.body}`);
      assert.equal(errorBody(res).error_code, 'VALIDATION_ERROR');
    }
    assert.equal((await list(`?q=${'x'.repeat(200)}`)).total, 0);
  });
});
