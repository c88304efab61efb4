import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import * as migration from '../../../src/db/migrations/20261201000000_user_order_counts.ts';
import * as rowTriggers from '../../../src/db/migrations/20261202000000_row_level_status_counters.ts';
import * as atCommit from '../../../src/db/migrations/20261215000000_counters_at_commit.ts';
import * as deltas from '../../../src/db/migrations/20261216000000_user_order_count_deltas.ts';
import { api, buildTestApp, createUser, type TestUser } from '../../helpers/app.ts';
import { createProduct } from '../../helpers/products.ts';
import { waitForFinal } from '../../helpers/orders.ts';
import { foldUserOrderCounts } from '../../../src/modules/orders/order-counts.repository.ts';

/**
 * `GET /orders`'s total comes from the counter rows the orders' trigger keeps per user and status:
 * they must equal a count of the user's orders after every kind of change, and after the migration
 * that counts the orders already there.
 */
describe('user_order_counts', () => {
  let app: FastifyInstance;
  let alice: TestUser;
  before(async () => {
    app = await buildTestApp(undefined);
    alice = await createUser(app);
  });
  after(() => app.close());

  const counted = async (userId: number) =>
    Object.fromEntries(
      (await sql<{ status: string; n: string }>`SELECT status, sum(total) AS n FROM user_order_counts WHERE user_id = ${userId} GROUP BY status HAVING sum(total) <> 0 ORDER BY status`.execute(app.ctx.db)).rows.map(
        (r) => [r.status, Number(r.n)],
      ),
    );
  const actual = async (userId: number) =>
    Object.fromEntries(
      (await sql<{ status: string; n: string }>`SELECT status, count(*) AS n FROM orders WHERE user_id = ${userId} GROUP BY status ORDER BY status`.execute(app.ctx.db)).rows.map((r) => [
        r.status,
        Number(r.n),
      ]),
    );
  const total = async (user: TestUser, query = '') => {
    const res = await api(app, user, { method: 'GET', url: `/api/v2/orders?page_size=1${query}` });
    assert.equal(res.statusCode, 200, res.body);
    return res.json<{ total: number }>().total;
  };
  /** Places an order of one line for `user` and waits until it is final; returns its id. */
  const placeFinal = async (user: TestUser, productId: number, quantity = 1) => {
    const res = await api(app, user, { method: 'POST', url: '/api/v1/orders', payload: { items: [{ product_id: productId, quantity }], shipping_address: '4 Count Road' } });
    assert.equal(res.statusCode, 201, res.body);
    return (await waitForFinal(app, res.json<{ id: number }>().id)).id;
  };

  it('follows placements, processing, failures, cancellations and retries', async () => {
    const plenty = await createProduct(app, { stock: 100, price: '2.00' });
    const scarce = await createProduct(app, { stock: 1, price: '3.00' });
    const place = (productId: number, quantity: number) => placeFinal(alice, productId, quantity);
    const done = [await place(plenty.id, 1), await place(plenty.id, 2), await place(plenty.id, 3)];
    const failed = await place(scarce.id, 5);
    assert.equal((await api(app, alice, { method: 'POST', url: `/api/v2/orders/${done[0]}/cancel`, payload: {} })).statusCode, 200);
    // a retried order goes back to pending, then fails again (still too little stock)
    assert.equal((await api(app, alice, { method: 'POST', url: `/api/v1/orders/${failed}/retry` })).statusCode, 202);
    await waitForFinal(app, failed);

    assert.deepEqual(await counted(alice.user.id), { cancelled: 1, completed: 2, failed: 1 });
    assert.deepEqual(await counted(alice.user.id), await actual(alice.user.id));
    assert.equal(await total(alice), 4);
    assert.equal(await total(alice, '&status=completed'), 2);
    // v1 reads a cancelled order as failed
    const v1 = await api(app, alice, { method: 'GET', url: '/api/v1/orders?page_size=1&status=failed' });
    assert.equal(v1.json<{ total: number }>().total, 2);
  });

  it('the fold leaves one row per status and the same counts; deltas written after it are counted on top', async (t) => {
    const carol = await createUser(app);
    const product = await createProduct(app, { stock: 10 });
    const place = () => placeFinal(carol, product.id);
    const rows = async () =>
      (await sql<{ status: string; total: string; folded: boolean }>`SELECT status, total, folded FROM user_order_counts WHERE user_id = ${carol.user.id} ORDER BY status, total`.execute(app.ctx.db)).rows.map((r) => [r.status, Number(r.total), r.folded]);
    const [schedule] = await app.ctx.queue.boss.getSchedules('order-counts-fold');
    assert.equal(schedule?.cron, '* * * * *', 'the fold runs every minute');
    // the scheduled fold stays out of this test's way: it folds only when the test says so
    await app.ctx.queue.boss.unschedule('order-counts-fold');
    t.after(() => app.ctx.queue.boss.schedule('order-counts-fold', '* * * * *'));
    await place();
    await place();
    // a placement appends +1 pending; each status change -1 for the old status and +1 for the new
    assert.equal((await rows()).length, 10);
    assert.ok((await foldUserOrderCounts(app.ctx.db)) >= 1);
    assert.deepEqual(await rows(), [['completed', 2, true]]);
    assert.equal(await total(carol), 2);
    await place();
    assert.deepEqual(await counted(carol.user.id), { completed: 3 });
    assert.deepEqual(await counted(carol.user.id), await actual(carol.user.id));
    await foldUserOrderCounts(app.ctx.db);
    assert.deepEqual(await rows(), [['completed', 3, true]]);
    assert.equal(await foldUserOrderCounts(app.ctx.db), 0, 'nothing left to fold');
  });

  it("the whole service's counters agree with the tables: orders by status, and events by the status they moved to", async () => {
    // this app's database holds only this file's orders: after the test above, many of them share a counter row
    const pairs = async (query: ReturnType<typeof sql<{ status: string; n: string }>>) =>
      Object.fromEntries((await query.execute(app.ctx.db)).rows.map((r) => [r.status, Number(r.n)]));
    assert.deepEqual(
      await pairs(sql`SELECT status, sum(total) AS n FROM order_counts GROUP BY status HAVING sum(total) <> 0 ORDER BY status`),
      await pairs(sql`SELECT status, count(*) AS n FROM orders GROUP BY status ORDER BY status`),
    );
    assert.deepEqual(
      await pairs(sql`SELECT status, sum(total) AS n FROM order_transition_counts GROUP BY status HAVING sum(total) <> 0 ORDER BY status`),
      await pairs(sql`SELECT status, count(*) AS n FROM order_events GROUP BY status ORDER BY status`),
    );
  });

  it('follows deletions, and the migration counts the orders already there', async () => {
    const bob = await createUser(app);
    const product = await createProduct(app, { stock: 10 });
    for (let i = 0; i < 3; i++) {
      const res = await api(app, bob, { method: 'POST', url: '/api/v1/orders', payload: { items: [{ product_id: product.id, quantity: 1 }], shipping_address: '5 Count Road' } });
      await waitForFinal(app, res.json<{ id: number }>().id);
    }
    const [first] = (await sql<{ id: number }>`SELECT id FROM orders WHERE user_id = ${bob.user.id} ORDER BY id LIMIT 1`.execute(app.ctx.db)).rows;
    await sql`DELETE FROM order_events WHERE order_id = ${first.id}`.execute(app.ctx.db);
    await sql`DELETE FROM job_links WHERE order_id = ${first.id}`.execute(app.ctx.db);
    await sql`DELETE FROM order_items WHERE order_id = ${first.id}`.execute(app.ctx.db);
    await sql`DELETE FROM orders WHERE id = ${first.id}`.execute(app.ctx.db);
    assert.deepEqual(await counted(bob.user.id), { completed: 2 });

    const before = { alice: await counted(alice.user.id), bob: await counted(bob.user.id) };
    await app.ctx.db.transaction().execute(async (trx) => {
      // later migrations count status changes with a row-level trigger, then every change at commit, then as delta rows: back to this one's, and forward again
      await deltas.down(trx as never);
      await atCommit.down(trx as never);
      await rowTriggers.down(trx as never);
      await migration.down(trx as never);
      await migration.up(trx as never);
      await rowTriggers.up(trx as never);
      await atCommit.up(trx as never);
      await deltas.up(trx as never);
    });
    assert.deepEqual({ alice: await counted(alice.user.id), bob: await counted(bob.user.id) }, before);
    assert.equal(await total(bob), 2);
  });
  it('a transaction takes no counter row until it commits: a placement for the same user goes through while another is open', { skip: !process.env.TEST_DATABASE_URL && 'needs PostgreSQL (TEST_DATABASE_URL): PGlite runs one transaction at a time' }, async () => {
    const product = await createProduct(app, { stock: 10 });
    const inserted = Promise.withResolvers<void>();
    const release = Promise.withResolvers<void>();
    const open = app.ctx.db.transaction().execute(async (trx) => {
      await sql`INSERT INTO orders (user_id, status, total_amount, shipping_address) VALUES (${alice.user.id}, 'pending', 0, '6 Open Road')`.execute(trx);
      inserted.resolve();
      await release.promise;
      throw new Error('rolled back on purpose');
    });
    await inserted.promise;
    let id: number;
    try {
      const placed = api(app, alice, { method: 'POST', url: '/api/v1/orders', payload: { items: [{ product_id: product.id, quantity: 1 }], shipping_address: '6 Count Road' } });
      const res = await Promise.race([placed, new Promise<'waiting'>((r) => setTimeout(() => r('waiting'), 5000))]);
      assert.notEqual(res, 'waiting', 'the placement waited for the open transaction');
      if (res === 'waiting') return;
      assert.equal(res.statusCode, 201, res.body);
      id = res.json<{ id: number }>().id;
      assert.equal((await waitForFinal(app, id)).status, 'completed');
    } finally {
      release.resolve();
      await open.catch(() => undefined);
    }
    assert.deepEqual(await counted(alice.user.id), await actual(alice.user.id));
  });
});
