import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { setTimeout } from 'node:timers/promises';
import { sql } from 'kysely';
import pg from 'pg';
import { notifyChannelSql } from 'pg-boss/dist/plans.js';
import { QUIET_NOTIFY_MS, READY_LOOKBACK_MS, recentReadyJobs } from '../../src/jobs/jobs.repository.ts';
import { api, buildTestApp, createUser, errorBody, type TestUser } from '../helpers/app.ts';
import { createProduct } from '../helpers/products.ts';
import { waitForFinal } from '../helpers/orders.ts';

/**
 * A new order's processing job is sent, and linked, by the statement that inserts the order: the
 * job must be the one pg-boss's own send would create, wake the workers as that send does, and the
 * link must name it, exist exactly when the order does, and never outlive a job that was not created.
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

  it('creates the job as pg-boss\'s own send does, and wakes the workers by its NOTIFY', async () => {
    const product = await createProduct(app, { stock: 5 });
    const channel = (await rows<{ channel: string }>(`SELECT ${notifyChannelSql('pgboss')} AS channel`))[0].channel;
    const notified = await listen(app, channel);
    let orderId: number;
    try {
      const res = await api(app, alice, { method: 'POST', url: '/api/v1/orders', payload: { items: [{ product_id: product.id, quantity: 1 }], shipping_address: '1 Link Street' } });
      assert.equal(res.statusCode, 201, res.body);
      orderId = res.json<{ id: number }>().id;
      for (let i = 0; i < 200 && !notified.payloads.includes('order-process'); i++) await setTimeout(25);
      assert.ok(notified.payloads.includes('order-process'), `NOTIFY on ${channel}: ${JSON.stringify(notified.payloads)}`);
    } finally {
      await notified.stop();
    }
    // a job sent by pg-boss itself for the same order, held back an hour so no worker takes it
    const reference = await app.ctx.queue.boss.send('order-process', { orderId }, { startAfter: 3600 });
    assert.ok(reference);
    try {
      // every column pg-boss sets from the queue's settings and the send's options, not those that
      // name the job, date it or follow its run
      const settings = async (where: string) =>
        (await rows<{ s: Record<string, unknown> }>(`SELECT to_jsonb(j) - ARRAY['id', 'data', 'created_on', 'start_after', 'keep_until', 'state',
           'started_on', 'completed_on', 'retry_count', 'output', 'heartbeat_on'] AS s FROM pgboss.job j WHERE ${where}`))[0].s;
      const linked = await settings(`id = (SELECT job_id FROM job_links WHERE order_id = ${orderId})`);
      assert.deepEqual(linked, await settings(`id = '${reference}'`));
      assert.ok('dead_letter' in linked && 'retry_limit' in linked && 'policy' in linked, JSON.stringify(linked));
      const data = await rows<{ data: unknown }>(`SELECT data FROM pgboss.job WHERE id = (SELECT job_id FROM job_links WHERE order_id = ${orderId})`);
      assert.deepEqual(data[0].data, { orderId });
      // the dates: due at once, and kept for the queue's retention from then, as pg-boss's send keeps its own
      const dates = async (where: string) =>
        (await rows<{ due_at_once: boolean; kept_for: string }>(`SELECT start_after = created_on AS due_at_once,
           extract(epoch FROM keep_until - start_after)::text AS kept_for FROM pgboss.job WHERE ${where}`))[0];
      const linkedDates = await dates(`id = (SELECT job_id FROM job_links WHERE order_id = ${orderId})`);
      assert.equal(linkedDates.due_at_once, true);
      assert.equal(linkedDates.kept_for, (await dates(`id = '${reference}'`)).kept_for);
    } finally {
      await sql`DELETE FROM pgboss.job WHERE id = ${reference}::uuid`.execute(app.ctx.db);
    }
  });

  it('sends no NOTIFY while the queue holds a job ready to fetch that was sent a moment ago, and sends it past one left behind', async (t) => {
    // an API process: no worker takes the jobs, so they stay ready to fetch
    const apiOnly = await buildTestApp(t, { role: 'api' });
    const bob = await createUser(apiOnly);
    const product = await createProduct(apiOnly, { stock: 10 });
    const channel = (await sql<{ channel: string }>`SELECT ${sql.raw(notifyChannelSql('pgboss'))} AS channel`.execute(apiOnly.ctx.db)).rows[0].channel;
    const place = async () => {
      const res = await api(apiOnly, bob, { method: 'POST', url: '/api/v1/orders', payload: { items: [{ product_id: product.id, quantity: 1 }], shipping_address: '1 Link Street' } });
      assert.equal(res.statusCode, 201, res.body);
    };
    // the ready jobs' age, set outright: how long placing takes is no part of the test
    const sentAgo = (interval: string) =>
      sql`UPDATE pgboss.job SET created_on = now() - ${interval}::interval WHERE name = 'order-process' AND state = 'created'`.execute(apiOnly.ctx.db);
    // NOTIFYs are delivered in commit order: once this one arrives, every earlier one has
    let markers = 0;
    const settled = async () => {
      const marker = `marker ${++markers}`;
      await sql`SELECT pg_notify(${channel}, ${marker})`.execute(apiOnly.ctx.db);
      for (let i = 0; i < 200 && !notified.payloads.includes(marker); i++) await setTimeout(25);
      assert.ok(notified.payloads.includes(marker), `${marker}: ${JSON.stringify(notified.payloads)}`);
    };
    const notified = await listen(apiOnly, channel);
    try {
      await place();
      await settled();
      assert.deepEqual(notified.payloads, ['order-process', 'marker 1'], 'the first job into an empty queue wakes the workers');
      await sentAgo(`-${QUIET_NOTIFY_MS * 100} milliseconds`); // just sent, for the rest of the test
      await place();
      await place();
      await settled();
      assert.deepEqual(notified.payloads.slice(2), ['marker 2'], 'jobs sent behind a ready one just sent send none');
      // a ready job older than the bound is one no fetch took in time: the next job wakes the workers for both
      await sentAgo(`${(QUIET_NOTIFY_MS + READY_LOOKBACK_MS) / 2} milliseconds`);
      await place();
      await settled();
      assert.deepEqual(notified.payloads.slice(3), ['order-process', 'marker 3']);
      // once the queue holds no ready job (a worker took them), the next job wakes the workers again
      await sql`UPDATE pgboss.job SET state = 'active' WHERE name = 'order-process' AND state = 'created'`.execute(apiOnly.ctx.db);
      await place();
      await settled();
      assert.deepEqual(notified.payloads.slice(5), ['order-process', 'marker 4']);
      // a ready job left behind longer than the look-back is the sweep's: the next job, with no
      // other ready job sent in the look-back, wakes the workers, and one sent behind that, a
      // moment later, sends none
      await sentAgo(`${READY_LOOKBACK_MS * 3} milliseconds`);
      await place();
      await settled();
      assert.deepEqual(notified.payloads.slice(7), ['order-process', 'marker 5']);
      await sql`UPDATE pgboss.job SET created_on = now() + interval '10 seconds' WHERE id = (SELECT id FROM pgboss.job
        WHERE name = 'order-process' AND state = 'created' ORDER BY created_on DESC LIMIT 1)`.execute(apiOnly.ctx.db);
      await place();
      await settled();
      assert.deepEqual(notified.payloads.slice(9), ['marker 6']);
    } finally {
      await notified.stop();
    }
  });

  it('reads only the jobs of the look-back, however many jobs the queue has had since the last VACUUM (PostgreSQL)', { skip: !process.env.TEST_DATABASE_URL && 'needs TEST_DATABASE_URL' }, async () => {
    const queue = 'user-email-changed'; // a queue the test app never sends to
    const check = sql<{ 'QUERY PLAN': string }>`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) ${recentReadyJobs('pgboss.job_common', queue)}`;
    const buffers = async () => {
      const plan = (await check.execute(app.ctx.db)).rows.map((r) => r['QUERY PLAN']).join('\n');
      // the plan's top line counts its nodes' buffers; a plan that touched none prints no such line
      const top = /Buffers: shared ([^\n]*)/.exec(plan)?.[1] ?? '';
      return { plan, read: [...top.matchAll(/(?:hit|read)=(\d+)/g)].reduce((n, m) => n + Number(m[1]), 0) };
    };
    const before = await buffers();
    // 20,000 jobs that were ready and were fetched: each leaves its entry in the fetch index until VACUUM
    await sql`INSERT INTO pgboss.job (name, created_on) SELECT ${queue}, now() - interval '1 hour' FROM generate_series(1, 20000)`.execute(app.ctx.db);
    await sql`UPDATE pgboss.job SET state = 'active' WHERE name = ${queue}`.execute(app.ctx.db);
    try {
      const after = await buffers();
      assert.match(after.plan, /Index Cond: .*created_on > \(now\(\) -/, after.plan);
      assert.ok(after.read <= before.read + 3, `buffers read: ${before.read} on an empty queue, ${after.read} after 20,000 jobs\n${after.plan}`);
    } finally {
      await sql`DELETE FROM pgboss.job WHERE name = ${queue}`.execute(app.ctx.db);
    }
  });

  it('refuses, and rolls back, a statement whose job pg-boss did not create', async () => {
    const product = await createProduct(app);
    const taken = app.ctx.queue.linkedJob('order-process', 'orderId');
    // the id is taken first, by a job of pg-boss's own send, held back so no worker runs it
    await app.ctx.queue.boss.send('order-process', { orderId: 0 }, { id: taken.id, startAfter: 3600 });
    const linksBefore = await count('SELECT count(*) AS n FROM job_links');
    const productsBefore = await count(`SELECT count(*) AS n FROM products WHERE id = ${product.id} AND name = 'renamed'`);
    // the job's insert skips an id already taken (ON CONFLICT DO NOTHING, as pg-boss's does): the statement fails
    await assert.rejects(
      app.ctx.db.transaction().execute(async (trx) => {
        await sql`UPDATE products SET name = 'renamed' WHERE id = ${product.id}`.execute(trx);
        await sql`WITH ${taken.ctes(sql`(SELECT 0 AS id)`)} SELECT count(*) FROM alongside`.execute(trx);
      }),
      /was not created/,
    );
    assert.equal(await count(`SELECT count(*) AS n FROM products WHERE id = ${product.id} AND name = 'renamed'`), productsBefore, 'the transaction rolled back');
    assert.equal(await count('SELECT count(*) AS n FROM job_links'), linksBefore);
    await sql`DELETE FROM pgboss.job WHERE id = ${taken.id}::uuid`.execute(app.ctx.db);
  });
});

/** Collects the NOTIFY payloads on `channel` of the app's database, on PGlite or PostgreSQL. */
async function listen(app: FastifyInstance, channel: string): Promise<{ payloads: string[]; stop: () => Promise<void> }> {
  const payloads: string[] = [];
  const { pglite, connectionString } = app.ctx.database;
  if (pglite) {
    const unlisten = await pglite.listen(channel, (payload) => payloads.push(payload));
    return { payloads, stop: unlisten };
  }
  const client = new pg.Client({ connectionString });
  await client.connect();
  client.on('notification', (n) => payloads.push(n.payload ?? ''));
  await client.query(`LISTEN "${channel}"`);
  return { payloads, stop: () => client.end() };
}
