import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, errorBody, waitFor, type TestUser } from '../../helpers/app.ts';
import { fixturePayload, seedProduct, sendInbound, SHOPIFY_SECRET, startReceiver, type Receiver } from '../../helpers/webhooks.ts';

interface TraceJob {
  id: string;
  queue: string;
  state: string;
  attempt_count: number;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  last_error: string | null;
}
interface TraceAttempt {
  attempt: number;
  attempted_at: string;
  status_code: number | null;
  duration_ms: number | null;
  success: boolean;
  error: string | null;
}
interface TraceMessage {
  message_id: string;
  event_type: string;
  sequence: number | null;
  status: string;
  attempts: TraceAttempt[];
}
interface Trace {
  order: { id: number; source: string; external_id: string | null; status: string; events: unknown[]; items: unknown[] };
  inbound: { id: number; webhook_id: string; topic: string; shop_domain: string; status: string; error: string | null; order_id: number; received_at: string; processed_at: string }[];
  events: { sequence: number; status: string }[];
  jobs: TraceJob[];
  trace_id: string | null;
  deliveries: { subscription_id: number; url: string; messages: TraceMessage[] }[];
}

describe('GET /admin/orders/{order_id}/trace: inbound webhook → order → jobs → outgoing deliveries', () => {
  let app: FastifyInstance;
  let admin: TestUser;
  let alice: TestUser;
  let subscriber: Receiver;
  let platform: Receiver;
  let subscriptionId: number;
  const externalId = '990000000001';

  const trace = (orderId: number | string, who: TestUser = admin) => api(app, who, { method: 'GET', url: `/api/v1/admin/orders/${orderId}/trace` });

  before(async () => {
    subscriber = await startReceiver();
    // the subscriber fails its first delivery, then accepts every one
    subscriber.respond = (_req, i) => (i === 0 ? { status: 500, body: 'try again' } : { status: 200, body: 'ok' });
    platform = await startReceiver('/admin/api');
    // the platform's API refuses the first fulfilment report: the job is retried by the queue
    platform.respond = (_req, i) => (i === 0 ? { status: 503 } : { status: 201, body: '{}' });
    app = await buildTestApp(undefined, {
      shopifyWebhookSecret: SHOPIFY_SECRET,
      platformApiUrl: platform.url,
      platformApiToken: 'shpat_trace',
      webhookRetrySchedule: [0.2, 0.2],
    });
    admin = await createUser(app, { admin: true });
    alice = await createUser(app);
    const sub = await api(app, admin, { method: 'POST', url: '/api/v1/webhooks/subscriptions', payload: { url: subscriber.url, events: ['order.created', 'order.status_changed'] } });
    assert.equal(sub.statusCode, 201, sub.body);
    subscriptionId = sub.json<{ id: number }>().id;
    await seedProduct(app, 'MUG-CERAMIC-350', { stock: 100 });
    await seedProduct(app, 'TEA-EARLGREY-100', { stock: 100 });
  });
  after(async () => {
    await app.close();
    await subscriber.close();
    await platform.close();
  });

  it('tells the whole story in one object', async () => {
    const res = await sendInbound(app, JSON.stringify({ ...fixturePayload(), id: Number(externalId) }), { webhookId: 'trace-1' });
    assert.equal(res.statusCode, 200, res.body);
    const orderId = await waitFor(async () => {
      const row = await app.ctx.db.selectFrom('orders').select('id').where('external_id', '=', externalId).executeTakeFirst();
      return row?.id;
    });
    // until every message is delivered and every job has finished
    const story = await waitFor(
      async () => {
        const r = await trace(orderId);
        assert.equal(r.statusCode, 200, r.body);
        const t = r.json<Trace>();
        const messages = t.deliveries.flatMap((d) => d.messages);
        const settled = messages.length === 3 && messages.every((m) => m.status === 'delivered');
        const finished = t.jobs.length > 0 && t.jobs.every((j) => j.state === 'completed') && t.jobs.some((j) => j.queue === 'webhook-platform-report');
        return settled && finished ? t : undefined;
      },
      30000,
    );
    assert.deepEqual(Object.keys(story).sort(), ['deliveries', 'events', 'inbound', 'jobs', 'order', 'trace_id']);
    // tracing is off in this process (test/ops/telemetry.test.ts covers it on)
    assert.equal(story.trace_id, null);

    // the order, as the admin read shows it
    const adminRead = (await api(app, admin, { method: 'GET', url: `/api/v1/admin/orders/${orderId}` })).json();
    assert.deepEqual(story.order, adminRead);
    assert.equal(story.order.source, 'platform');
    assert.equal(story.order.external_id, externalId);
    assert.equal(story.order.status, 'completed');

    // the platform webhook that created it
    assert.equal(story.inbound.length, 1);
    const [inbound] = story.inbound;
    assert.equal(inbound.webhook_id, 'trace-1');
    assert.equal(inbound.topic, 'orders/create');
    assert.equal(inbound.shop_domain, 'test-shop.myshopify.com');
    assert.equal(inbound.status, 'processed');
    assert.equal(inbound.error, null);
    assert.equal(inbound.order_id, orderId);
    assert.ok(inbound.received_at && inbound.processed_at);

    // its events
    assert.deepEqual(story.events.map((e) => [e.sequence, e.status]), [
      [1, 'pending'],
      [2, 'processing'],
      [3, 'completed'],
    ]);
    assert.deepEqual(story.events, story.order.events);

    // every job run for it, oldest first: the webhook's processing, the order's, each delivery attempt, the platform report
    const queues = story.jobs.map((j) => j.queue);
    assert.equal(queues[0], 'webhook-inbound-process');
    // the order's processing is sent with the order; its deliveries and the platform report follow
    // from its events, which are published after the commit (one run may carry all three)
    assert.equal(queues[1], 'order-process');
    assert.equal(queues.filter((q) => q === 'order-process').length, 1);
    assert.equal(queues.filter((q) => q === 'webhook-deliver').length, 4, 'three messages, the first one attempted twice');
    const report = story.jobs.filter((j) => j.queue === 'webhook-platform-report');
    assert.equal(report.length, 1);
    assert.equal(report[0].attempt_count, 2, 'the platform refused the first report; the queue retried it');
    for (const j of story.jobs) {
      assert.equal(j.state, 'completed', j.queue);
      assert.ok(j.attempt_count >= 1);
      assert.ok(j.started_at && j.finished_at && j.created_at, j.queue);
      assert.ok(Date.parse(j.finished_at) >= Date.parse(j.started_at));
      assert.equal(j.last_error, null);
      assert.match(j.id, /^[0-9a-f-]{36}$/);
    }
    const created = story.jobs.map((j) => Date.parse(j.created_at));
    assert.deepEqual(created, [...created].sort((a, b) => a - b));

    // the deliveries: one subscription, three messages in sequence, the first failed once then delivered
    assert.equal(story.deliveries.length, 1);
    const [delivery] = story.deliveries;
    assert.equal(delivery.subscription_id, subscriptionId);
    assert.equal(delivery.url, subscriber.url);
    assert.deepEqual(
      delivery.messages.map((m) => [m.event_type, m.sequence, m.status, m.attempts.length]),
      [
        ['order.created', 1, 'delivered', 2],
        ['order.status_changed', 2, 'delivered', 1],
        ['order.status_changed', 3, 'delivered', 1],
      ],
    );
    const [failedAttempt, retried] = delivery.messages[0].attempts;
    assert.deepEqual([failedAttempt.attempt, failedAttempt.status_code, failedAttempt.success], [1, 500, false]);
    assert.ok(failedAttempt.error);
    assert.deepEqual([retried.attempt, retried.status_code, retried.success, retried.error], [2, 200, true, null]);
    for (const a of delivery.messages.flatMap((m) => m.attempts)) {
      assert.ok(typeof a.duration_ms === 'number' && a.duration_ms >= 0);
      assert.ok(Date.parse(a.attempted_at) > 0);
    }
    assert.ok(Date.parse(retried.attempted_at) >= Date.parse(failedAttempt.attempted_at));
    // the same message ids the subscriber received
    const received = new Set(subscriber.requests.map((r) => String(r.headers['webhook-id'])));
    for (const m of delivery.messages) assert.ok(received.has(m.message_id), m.message_id);
  });

  it('an API order has no inbound webhooks; its jobs and deliveries are there', async () => {
    const product = await seedProduct(app, 'TRACE-API-1', { stock: 10 });
    const res = await api(app, alice, { method: 'POST', url: '/api/v1/orders', payload: { items: [{ product_id: product.id, quantity: 1 }], shipping_address: 'x' } });
    const orderId = res.json<{ id: number }>().id;
    const story = await waitFor(async () => {
      const t = (await trace(orderId)).json<Trace>();
      return t.jobs.some((j) => j.queue === 'order-process' && j.state === 'completed') ? t : undefined;
    });
    assert.deepEqual(story.inbound, []);
    assert.equal(story.order.source, 'api');
    assert.ok(story.deliveries.length <= 1);
  });

  it('404 for a missing order, 403 ADMIN_REQUIRED for a non-admin (the owner too), 401 without a token', async () => {
    for (const id of ['999999', '0']) {
      const res = await trace(id);
      assert.equal(res.statusCode, 404);
      assert.equal(errorBody(res).error_code, 'NOT_FOUND');
    }
    assert.equal((await trace('x')).statusCode, 422);
    const own = await app.ctx.db.selectFrom('orders').select('id').where('user_id', '=', alice.user.id).executeTakeFirstOrThrow();
    const res = await trace(own.id, alice);
    assert.equal(res.statusCode, 403);
    assert.equal(errorBody(res).error_code, 'ADMIN_REQUIRED');
    assert.equal((await api(app, null, { method: 'GET', url: `/api/v1/admin/orders/${own.id}/trace` })).statusCode, 401);
  });
});
