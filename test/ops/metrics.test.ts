import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import client from 'prom-client';
import { api, buildTestApp, createUser, waitFor, type TestUser } from '../helpers/app.ts';
import { createProduct } from '../helpers/products.ts';
import { waitForFinal } from '../helpers/orders.ts';
import { sendInbound, SHOPIFY_SECRET, startReceiver, type Receiver } from '../helpers/webhooks.ts';
import { registerOperationsMetrics } from '../../src/modules/operations/operations.metrics.ts';
import { inOrderTransaction, placeOrder } from '../../src/modules/orders/order-lifecycle.ts';

/** The samples of /metrics as `name{labels}` → value. */
function parse(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

describe('/metrics: jobs, orders and webhooks', () => {
  let app: FastifyInstance;
  let alice: TestUser;
  let receiver: Receiver;

  const scrape = async () => {
    const res = await app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(res.statusCode, 200);
    return { text: res.body, samples: parse(res.body) };
  };
  const count = async (query: string) => Number((await sql<{ n: number }>`${sql.raw(query)}`.execute(app.ctx.db)).rows[0].n);

  before(async () => {
    receiver = await startReceiver();
    receiver.respond = (_req, i) => (i === 0 ? { status: 500 } : { status: 204 });
    // no caching here: every scrape reads the database (the cache has its own test below)
    app = await buildTestApp(undefined, { metricsCacheSeconds: 0, shopifyWebhookSecret: SHOPIFY_SECRET, webhookRetrySchedule: [0.2] });
    alice = await createUser(app);
    const sub = await api(app, alice, { method: 'POST', url: '/api/v1/webhooks/subscriptions', payload: { url: receiver.url, events: ['order.created'] } });
    assert.equal(sub.statusCode, 201, sub.body);
  });
  after(async () => {
    await app.close();
    await receiver.close();
  });

  it('documents every metric with its type', async () => {
    const { text } = await scrape();
    for (const [name, type] of [
      ['jobs_queued', 'gauge'],
      ['jobs_active', 'gauge'],
      ['jobs_failed', 'gauge'],
      ['order_status_transitions_total', 'counter'],
      ['orders_open', 'gauge'],
      ['webhook_deliveries_total', 'counter'],
      ['webhook_oldest_undelivered_message_age_seconds', 'gauge'],
      ['inbound_webhooks', 'gauge'],
      ['http_request_duration_seconds', 'histogram'],
      // Node's default metrics, the event-loop delay sampled every 100 ms (src/http/observability.ts)
      ['nodejs_eventloop_lag_p99_seconds', 'gauge'],
    ]) {
      assert.ok(text.includes(`# TYPE ${name} ${type}`), `${name} ${type}`);
      assert.ok(text.includes(`# HELP ${name} `), name);
    }
  });

  it('order status changes per status and delivery attempts per result (this process\'s counts), open orders, inbound webhooks not processed', async () => {
    // counters of this process: other apps of the test run count into them too, so the test reads what they gained
    const before = (await scrape()).samples;
    const gained = (now: Map<string, number>, key: string) => now.get(key)! - before.get(key)!;
    const product = await createProduct(app, { stock: 1 });
    const placed: number[] = [];
    for (const quantity of [1, 1]) {
      const res = await api(app, alice, { method: 'POST', url: '/api/v1/orders', payload: { items: [{ product_id: product.id, quantity }], shipping_address: 'x' } });
      assert.equal(res.statusCode, 201, res.body);
      placed.push(res.json<{ id: number }>().id);
    }
    for (const id of placed) await waitForFinal(app, id);
    await sendInbound(app, '{"not": "an order"}');
    await waitFor(async () => ((await count(`SELECT count(*) AS n FROM inbound_webhooks WHERE status = 'failed'`)) === 1 ? true : undefined));
    // two order.created messages: the first attempt of the first fails, its retry and the second succeed
    await waitFor(async () => ((await count(`SELECT count(*) AS n FROM webhook_messages WHERE status = 'delivered'`)) === 2 ? true : undefined));

    const { samples } = await scrape();
    assert.equal(gained(samples, 'order_status_transitions_total{status="pending"}'), 2);
    assert.equal(gained(samples, 'order_status_transitions_total{status="processing"}'), 2);
    assert.equal(gained(samples, 'order_status_transitions_total{status="completed"}'), 1);
    assert.equal(gained(samples, 'order_status_transitions_total{status="failed"}'), 1);
    assert.equal(gained(samples, 'order_status_transitions_total{status="cancelled"}'), 0);
    assert.equal(gained(samples, 'webhook_deliveries_total{result="success"}'), 2);
    assert.equal(gained(samples, 'webhook_deliveries_total{result="failure"}'), 1);
    assert.equal(samples.get('webhook_oldest_undelivered_message_age_seconds'), 0);
    assert.equal(samples.get('inbound_webhooks{status="failed"}'), 1);
    assert.equal(samples.get('inbound_webhooks{status="received"}'), 0);
    assert.equal(samples.get('orders_open{status="pending"}'), 0);
    assert.equal(samples.get('orders_open{status="processing"}'), 0);

    // a cancellation is counted where it is made; an order left pending and one processing are open
    const plenty = await createProduct(app, { stock: 10 });
    const res = await api(app, alice, { method: 'POST', url: '/api/v2/orders', payload: { items: [{ product_id: plenty.id, quantity: 1 }], shipping_address: 'x' } });
    const cancelled = await api(app, alice, { method: 'POST', url: `/api/v2/orders/${res.json<{ id: number }>().id}/cancel` });
    assert.equal(cancelled.statusCode, 200, cancelled.body);
    const db = app.ctx.db;
    const owner = alice.user.id;
    await db.insertInto('orders').values([{ user_id: owner, status: 'pending', total_amount: '0', shipping_address: 'x' }, { user_id: owner, status: 'processing', total_amount: '0', shipping_address: 'x' }]).execute();
    const after = (await scrape()).samples;
    assert.equal(gained(after, 'order_status_transitions_total{status="cancelled"}'), 1);
    assert.equal(after.get('orders_open{status="pending"}'), 1);
    assert.equal(after.get('orders_open{status="processing"}'), 1);
    await db.deleteFrom('orders').where('user_id', '=', owner).where('status', 'in', ['pending', 'processing']).execute();
    // the cancelled order's order.created message is delivered before the next test reads the undelivered age
    await waitFor(async () => ((await count(`SELECT count(*) AS n FROM webhook_messages WHERE status = 'delivered'`)) === 3 ? true : undefined));
  });

  it('a change whose transaction rolls back is not counted', async () => {
    const before = (await scrape()).samples;
    const product = await createProduct(app, { stock: 5 });
    const { queue, db } = app.ctx;
    await assert.rejects(
      inOrderTransaction(db, queue, async (trx) => {
        const { order } = await placeOrder(trx, queue, { userId: alice.user.id, shippingAddress: 'x', lines: [{ productId: product.id, quantity: 1 }] });
        assert.ok(order);
        throw new Error('rolled back');
      }),
      /rolled back/,
    );
    const after = (await scrape()).samples;
    assert.equal(after.get('order_status_transitions_total{status="pending"}'), before.get('order_status_transitions_total{status="pending"}'));
    assert.equal(await count(`SELECT count(*) AS n FROM orders WHERE user_id = ${alice.user.id} AND status = 'pending'`), 0);
  });

  it('queued, running and failed jobs per queue, as pg-boss last counted them', async () => {
    const before = (await scrape()).samples;
    assert.equal(before.get('jobs_queued{queue="webhook-platform-report"}'), 0, 'every queue is reported, with 0 when empty');
    // a job due in an hour waits in its queue; another, with no retry left, is failed for good
    await app.ctx.queue.sendNow('webhook-platform-report', { orderId: 1 }, { startAfter: 3600 });
    const doomed = await app.ctx.queue.sendNow('webhook-platform-report', { orderId: 2 }, { startAfter: 3600, retryLimit: 0 });
    await app.ctx.queue.boss.fail('webhook-platform-report', doomed, { message: 'failed for the test' });
    await waitFor(
      async () => {
        const now = (await scrape()).samples;
        return now.get('jobs_queued{queue="webhook-platform-report"}') === 1 && now.get('jobs_failed{queue="webhook-platform-report"}') === 1 ? true : undefined;
      },
      30_000,
    );
  });

  it('the age of the oldest message not yet delivered', async () => {
    const sub = await app.ctx.db.selectFrom('webhook_subscriptions').select('id').executeTakeFirstOrThrow();
    await app.ctx.db
      .insertInto('webhook_messages')
      .values({ message_id: 'msg_metrics_held', subscription_id: sub.id, event_id: null, order_id: null, event_type: 'order.created', payload: '{}', status: 'held', created_at: new Date(Date.now() - 3600_000) })
      .execute();
    const age = (await scrape()).samples.get('webhook_oldest_undelivered_message_age_seconds')!;
    assert.ok(age >= 3600 && age < 3700, String(age));
    await app.ctx.db.deleteFrom('webhook_messages').where('message_id', '=', 'msg_metrics_held').execute();
    assert.equal((await scrape()).samples.get('webhook_oldest_undelivered_message_age_seconds'), 0);
  });

  it('reuses what it read for the cache period: frequent scrapes do not query the database again', async () => {
    const registry = new client.Registry();
    registerOperationsMetrics(registry, { db: app.ctx.db, queue: app.ctx.queue, cacheSeconds: 3600, log: app.ctx.log });
    const first = parse(await registry.metrics()).get('inbound_webhooks{status="failed"}')!;
    await sendInbound(app, 'still not an order');
    await waitFor(async () => ((await count(`SELECT count(*) AS n FROM inbound_webhooks WHERE status = 'failed'`)) === first + 1 ? true : undefined));
    assert.equal(parse(await registry.metrics()).get('inbound_webhooks{status="failed"}'), first, 'the cached figure');
    assert.equal((await scrape()).samples.get('inbound_webhooks{status="failed"}'), first + 1, 'the uncached app reads it');
  });
});
