import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { api, buildTestApp, createUser, errorBody, type TestUser } from '../helpers/app.ts';
import { createProduct } from '../helpers/products.ts';
import { waitForFinal } from '../helpers/orders.ts';

/**
 * A new order's processing job is linked by the statement that inserts the order (its id chosen
 * before pg-boss's insert): the link must name the job pg-boss created, exist exactly when the
 * order does, and never outlive a job that was not created.
 */
describe('the processing job linked by the order insert', () => {
  let app: FastifyInstance;
  let alice: TestUser;

  const rows = async <T>(query: string) => (await sql<T>`${sql.raw(query)}`.execute(app.ctx.db)).rows;
  const count = async (query: string) => Number((await rows<{ n: number }>(query))[0].n);

  before(async () => {
    app = await buildTestApp(undefined);
    alice = await createUser(app);
  });

  it('links the order to the job pg-boss created for it, and to no other', async () => {
    const product = await createProduct(app, { stock: 5 });
    const res = await api(app, alice, { method: 'POST', url: '/api/v1/orders', payload: { items: [{ product_id: product.id, quantity: 1 }], shipping_address: '1 Link Street' } });
    assert.equal(res.statusCode, 201, res.body);
    const orderId = res.json<{ id: number }>().id;
    const links = await rows<{ job_id: string; queue: string; inbound_webhook_id: number | null; message_row_id: number | null }>(
      `SELECT job_id::text, queue, inbound_webhook_id, message_row_id FROM job_links WHERE order_id = ${orderId}`,
    );
    assert.equal(links.length, 1);
    assert.equal(links[0].queue, 'order-process');
    assert.equal(links[0].inbound_webhook_id, null);
    assert.equal(links[0].message_row_id, null);
    const jobs = await rows<{ id: string; order_id: string }>(`SELECT id::text, data->>'orderId' AS order_id FROM pgboss.job WHERE name = 'order-process' AND id = '${links[0].job_id}'`);
    assert.deepEqual(jobs, [{ id: links[0].job_id, order_id: String(orderId) }]);
    // the job it names is the one that processes the order
    assert.equal((await waitForFinal(app, orderId)).status, 'completed');
  });

  it('writes no link, and sends no job, when the order is refused', async () => {
    const inactive = await createProduct(app, { active: false });
    const before = { links: await count('SELECT count(*) AS n FROM job_links'), jobs: await count(`SELECT count(*) AS n FROM pgboss.job WHERE name = 'order-process'`) };
    const res = await api(app, alice, { method: 'POST', url: '/api/v1/orders', payload: { items: [{ product_id: inactive.id, quantity: 1 }], shipping_address: '1 Link Street' } });
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(errorBody(res).error_code, 'INVALID_PRODUCT');
    assert.equal(await count('SELECT count(*) AS n FROM job_links'), before.links);
    assert.equal(await count(`SELECT count(*) AS n FROM pgboss.job WHERE name = 'order-process'`), before.jobs);
  });

  it('refuses, and rolls back, a send whose job pg-boss did not create', async () => {
    const product = await createProduct(app);
    const taken = app.ctx.queue.linkedJob('order-process', 'orderId');
    await app.ctx.db.transaction().execute((trx) => app.ctx.queue.sendLinked(trx, taken, { orderId: 0 }, { startAfter: 3600 }));
    const linksBefore = await count('SELECT count(*) AS n FROM job_links');
    const productsBefore = await count(`SELECT count(*) AS n FROM products WHERE id = ${product.id} AND name = 'renamed'`);
    // a second send of the same id is one pg-boss skips (ON CONFLICT DO NOTHING)
    await assert.rejects(
      app.ctx.db.transaction().execute(async (trx) => {
        await sql`UPDATE products SET name = 'renamed' WHERE id = ${product.id}`.execute(trx);
        await app.ctx.queue.sendLinked(trx, taken, { orderId: 0 });
      }),
      /was not created/,
    );
    assert.equal(await count(`SELECT count(*) AS n FROM products WHERE id = ${product.id} AND name = 'renamed'`), productsBefore, 'the transaction rolled back');
    assert.equal(await count('SELECT count(*) AS n FROM job_links'), linksBefore);
    await sql`DELETE FROM pgboss.job WHERE id = ${taken.id}::uuid`.execute(app.ctx.db);
  });
});
