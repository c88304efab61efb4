import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { api, buildTestApp, createUser, waitFor, type TestUser } from '../../helpers/app.ts';
import { DISABLE_AFTER_FAILED_MESSAGES } from '../../../src/modules/outbound-webhooks/delivery.service.ts';
import { seedProduct, startReceiver, type ReceivedRequest, type Receiver } from '../../helpers/webhooks.ts';

const BASE = '/api/v1/webhooks/subscriptions';

interface Envelope {
  id: string;
  type: string;
  timestamp: string;
  data: { order_id: number; user_id: number; previous_status: string | null; status: string; total_amount: number; sequence: number };
}

/** Verifies a delivery with the standardwebhooks package (a verifier this project did not write). */
function verified(secret: string, req: ReceivedRequest): Envelope {
  const headers = {
    'webhook-id': String(req.headers['webhook-id']),
    'webhook-timestamp': String(req.headers['webhook-timestamp']),
    'webhook-signature': String(req.headers['webhook-signature']),
  };
  return new Webhook(secret).verify(req.body, headers) as Envelope;
}

describe('outgoing webhook delivery', () => {
  let app: FastifyInstance;
  let alice: TestUser;
  let bob: TestUser;
  let admin: TestUser;
  /** never places orders: its subscriptions see only what a test sends them */
  let quiet: TestUser;
  let productId: number;
  const receivers: Receiver[] = [];

  async function receiver(): Promise<Receiver> {
    const r = await startReceiver();
    receivers.push(r);
    return r;
  }

  async function subscribe(who: TestUser, url: string, events = ['order.created', 'order.status_changed']) {
    const res = await api(app, who, { method: 'POST', url: BASE, payload: { url, events } });
    assert.equal(res.statusCode, 201, res.body);
    return res.json<{ id: number; secret: string }>();
  }

  async function placeOrder(who: TestUser): Promise<number> {
    const res = await api(app, who, {
      method: 'POST',
      url: '/api/v1/orders',
      payload: { items: [{ product_id: productId, quantity: 1 }], shipping_address: '1 Test Street' },
    });
    assert.equal(res.statusCode, 201, res.body);
    return res.json<{ id: number }>().id;
  }

  async function deliveries(who: TestUser, subscriptionId: number) {
    const res = await api(app, who, { method: 'GET', url: `${BASE}/${subscriptionId}/deliveries?page_size=100` });
    assert.equal(res.statusCode, 200, res.body);
    return res.json<{ items: { attempt: number; success: boolean; status_code: number | null; message_id: string; event_type: string; event_id: number | null; error: string | null; duration_ms: number }[]; total: number }>();
  }

  before(async () => {
    app = await buildTestApp(undefined, { webhookRetrySchedule: [0.2, 0.2, 0.2] });
    alice = await createUser(app);
    bob = await createUser(app);
    admin = await createUser(app, { admin: true });
    quiet = await createUser(app);
    productId = (await seedProduct(app, 'HOOK-SKU-1', { price: '19.99', stock: 10000 })).id;
  });
  after(async () => {
    await app.close();
    for (const r of receivers) await r.close();
  });

  it('an order\'s events arrive signed, in sequence, with the envelope of DESIGN §6', async () => {
    const r = await receiver();
    const sub = await subscribe(alice, r.url);
    const orderId = await placeOrder(alice);
    // each change's publishing job hands its event over after the commit: no wake-up lost, all three within 10 s
    await waitFor(async () => (r.requests.length >= 3 ? true : undefined), 10_000);
    // nothing beyond the three events of this order
    const envelopes = r.requests.map((req) => verified(sub.secret, req));
    assert.deepEqual(
      envelopes.map((e) => [e.type, e.data.previous_status, e.data.status, e.data.sequence]),
      [
        ['order.created', null, 'pending', 1],
        ['order.status_changed', 'pending', 'processing', 2],
        ['order.status_changed', 'processing', 'completed', 3],
      ],
    );
    const events = await app.ctx.db.selectFrom('order_events').selectAll().where('order_id', '=', orderId).orderBy('sequence').execute();
    envelopes.forEach((e, i) => {
      assert.deepEqual(Object.keys(e).sort(), ['data', 'id', 'timestamp', 'type']);
      assert.deepEqual(Object.keys(e.data).sort(), ['order_id', 'previous_status', 'sequence', 'status', 'total_amount', 'user_id']);
      assert.equal(e.id, `evt_${events[i].id}`);
      assert.equal(e.data.order_id, orderId);
      assert.equal(e.data.user_id, alice.user.id);
      assert.equal(r.requests[i].headers['webhook-id'], `msg_${events[i].id}_${sub.id}`);
      assert.equal(r.requests[i].headers['content-type'], 'application/json');
    });
    assert.equal(envelopes[2].data.total_amount, 19.99);

    // the receiver answers before the worker records the attempt: wait for the third row
    const log = await waitFor(async () => {
      const l = await deliveries(alice, sub.id);
      return l.items.length >= 3 ? l : undefined;
    });
    assert.equal(log.total, 3);
    assert.ok(log.items.every((d) => d.success && d.status_code === 200 && d.attempt === 1 && d.error === null));
    assert.deepEqual(Object.keys(log.items[0]).sort(), ['attempt', 'created_at', 'duration_ms', 'error', 'event_id', 'event_type', 'id', 'message_id', 'message_status', 'order_id', 'status_code', 'success']);
  });

  it('a subscription gets only its owner\'s orders; an administrator\'s gets every order; kinds are filtered', async () => {
    const bobHook = await receiver();
    const adminHook = await receiver();
    const createdOnly = await receiver();
    const bobSub = await subscribe(bob, bobHook.url);
    const adminSub = await subscribe(admin, adminHook.url, ['order.status_changed']);
    await subscribe(alice, createdOnly.url, ['order.created']);
    const orderId = await placeOrder(alice);
    await waitFor(async () => (adminHook.requests.length >= 2 && createdOnly.requests.length >= 1 ? true : undefined));
    const adminEvents = adminHook.requests.map((req) => verified(adminSub.secret, req));
    assert.deepEqual(adminEvents.map((e) => [e.data.order_id, e.data.status]), [
      [orderId, 'processing'],
      [orderId, 'completed'],
    ]);
    assert.equal(createdOnly.requests.length, 1);
    assert.equal(JSON.parse(createdOnly.requests[0].body).type, 'order.created');
    // bob's own order reaches bob; alice's never did
    const bobOrder = await placeOrder(bob);
    await waitFor(async () => (bobHook.requests.length >= 3 ? true : undefined));
    assert.ok(bobHook.requests.every((req) => verified(bobSub.secret, req).data.order_id === bobOrder));
  });

  it('a receiver failing twice gets the event on the third attempt, with the same webhook-id', async () => {
    const r = await receiver();
    r.respond = (_req, i) => (i < 2 ? { status: 500, body: 'boom' } : { status: 204 });
    const sub = await subscribe(quiet, r.url);
    const res = await api(app, quiet, { method: 'POST', url: `${BASE}/${sub.id}/test` });
    assert.equal(res.statusCode, 202);
    const messageId = res.json<{ message_id: string }>().message_id;
    await waitFor(async () => (r.requests.length >= 3 ? true : undefined));
    assert.ok(r.requests.every((req) => req.headers['webhook-id'] === messageId));
    for (const req of r.requests) verified(sub.secret, req);
    const log = await waitFor(async () => {
      const l = await deliveries(quiet, sub.id);
      return l.items.length >= 3 ? l : undefined;
    });
    assert.deepEqual(
      log.items.map((d) => [d.attempt, d.status_code, d.success]).reverse(),
      [
        [1, 500, false],
        [2, 500, false],
        [3, 204, true],
      ],
    );
    assert.equal(log.items[2].error, 'HTTP 500: boom');
    const message = await app.ctx.db.selectFrom('webhook_messages').selectAll().where('message_id', '=', messageId).executeTakeFirstOrThrow();
    assert.equal(message.status, 'delivered');
    assert.equal(message.attempts, 3);
  });

  it('an order\'s later events wait while an earlier one is retried, so they still arrive in sequence', async () => {
    const r = await receiver();
    r.respond = (_req, i) => (i === 0 ? { status: 503 } : { status: 200 });
    const sub = await subscribe(alice, r.url);
    const orderId = await placeOrder(alice);
    const ofOrder = () => r.requests.map((req) => verified(sub.secret, req)).filter((e) => e.data.order_id === orderId);
    await waitFor(async () => (ofOrder().length >= 4 ? true : undefined));
    assert.deepEqual(ofOrder().map((e) => e.data.sequence), [1, 1, 2, 3], 'sequence 1 failed once and was retried before 2 and 3 were sent');
  });

  it('after the whole schedule the message fails and counts against the subscription', async () => {
    const r = await receiver();
    r.respond = () => ({ status: 500 });
    const sub = await subscribe(quiet, r.url);
    const res = await api(app, quiet, { method: 'POST', url: `${BASE}/${sub.id}/test` });
    const messageId = res.json<{ message_id: string }>().message_id;
    const message = await waitFor(async () => {
      const m = await app.ctx.db.selectFrom('webhook_messages').selectAll().where('message_id', '=', messageId).executeTakeFirst();
      return m?.status === 'failed' ? m : undefined;
    });
    assert.equal(message.attempts, 4, 'one attempt plus one per entry of the schedule');
    assert.equal(r.requests.length, 4);
    const row = await app.ctx.db.selectFrom('webhook_subscriptions').selectAll().where('id', '=', sub.id).executeTakeFirstOrThrow();
    assert.equal(row.consecutive_failures, 1);
    assert.equal(row.is_active, true);
  });

  it('a long run of failed messages disables the subscription', async () => {
    const r = await receiver();
    r.respond = () => ({ status: 502 });
    const sub = await subscribe(quiet, r.url);
    await app.ctx.db.updateTable('webhook_subscriptions').set({ consecutive_failures: DISABLE_AFTER_FAILED_MESSAGES - 1 }).where('id', '=', sub.id).execute();
    await api(app, quiet, { method: 'POST', url: `${BASE}/${sub.id}/test` });
    const row = await waitFor(async () => {
      const s = await app.ctx.db.selectFrom('webhook_subscriptions').selectAll().where('id', '=', sub.id).executeTakeFirst();
      return s && !s.is_active ? s : undefined;
    });
    assert.equal(row.consecutive_failures, DISABLE_AFTER_FAILED_MESSAGES);
    assert.equal(row.disabled_reason, `disabled after ${DISABLE_AFTER_FAILED_MESSAGES} consecutive failed messages`);
    assert.equal(r.requests.length, 4);
  });

  it('410 Gone disables the subscription at once; nothing more is sent to it', async () => {
    const r = await receiver();
    r.respond = () => ({ status: 410 });
    const sub = await subscribe(alice, r.url);
    await api(app, alice, { method: 'POST', url: `${BASE}/${sub.id}/test` });
    const disabled = await waitFor(async () => {
      const s = await api(app, alice, { method: 'GET', url: `${BASE}/${sub.id}` });
      return s.json<{ is_active: boolean }>().is_active ? undefined : s.json<{ is_active: boolean; disabled_reason: string }>();
    });
    assert.equal(disabled.disabled_reason, 'receiver answered 410 Gone');
    assert.equal(r.requests.length, 1, 'no retry after 410');
    await placeOrder(alice);
    const before = r.requests.length;
    // another subscription of alice's sees the next order's events, this one does not
    const witness = await receiver();
    await subscribe(alice, witness.url);
    const second = await placeOrder(alice);
    await waitFor(async () => (witness.requests.filter((q) => JSON.parse(q.body).data.order_id === second).length >= 3 ? true : undefined));
    assert.equal(r.requests.length, before);
  });

  it('rotate-secret without overlap takes effect at once: the next delivery verifies with the new secret only', async () => {
    const r = await receiver();
    const sub = await subscribe(quiet, r.url);
    const rotated = await api(app, quiet, { method: 'POST', url: `${BASE}/${sub.id}/rotate-secret`, payload: { overlap_seconds: 0 } });
    assert.equal(rotated.statusCode, 200);
    const newSecret = rotated.json<{ secret: string }>().secret;
    await api(app, quiet, { method: 'POST', url: `${BASE}/${sub.id}/test` });
    await waitFor(async () => (r.requests.length >= 1 ? true : undefined));
    const envelope = verified(newSecret, r.requests[0]);
    assert.equal(envelope.type, 'webhook.test');
    assert.throws(() => verified(sub.secret, r.requests[0]), /signature/i);
  });

  it('the test route delivers a signed webhook.test event', async () => {
    const r = await receiver();
    const sub = await subscribe(quiet, r.url);
    const res = await api(app, quiet, { method: 'POST', url: `${BASE}/${sub.id}/test` });
    assert.equal(res.statusCode, 202);
    assert.equal(res.json<{ status: string }>().status, 'queued');
    await waitFor(async () => (r.requests.length >= 1 ? true : undefined));
    const envelope = verified(sub.secret, r.requests[0]) as unknown as { type: string; data: { subscription_id: number } };
    assert.equal(envelope.type, 'webhook.test');
    assert.equal(envelope.data.subscription_id, sub.id);
    const log = await waitFor(async () => {
      const l = await deliveries(quiet, sub.id);
      return l.items.length >= 1 ? l : undefined;
    });
    assert.equal(log.items[0].event_type, 'webhook.test');
    assert.equal(log.items[0].success, true);
    assert.equal(log.items[0].event_id, null);
  });

  it('redirects are not followed: the redirect target is never contacted', async () => {
    const target = await receiver();
    const r = await receiver();
    r.respond = () => ({ status: 302, headers: { location: target.url } });
    const sub = await subscribe(quiet, r.url);
    await api(app, quiet, { method: 'POST', url: `${BASE}/${sub.id}/test` });
    const log = await waitFor(async () => {
      const l = await deliveries(quiet, sub.id);
      return l.items.length >= 1 ? l : undefined;
    });
    const seen = JSON.stringify(log.items);
    assert.ok(log.items.every((d) => d.status_code === 302 && !d.success), seen);
    assert.match(log.items[0].error ?? '', /redirect not followed/, seen);
    assert.equal(target.requests.length, 0, 'the redirect target was contacted');
  });
});
