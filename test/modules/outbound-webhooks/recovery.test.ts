import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, errorBody, waitFor, type TestUser } from '../../helpers/app.ts';
import { seedProduct } from '../../helpers/webhooks.ts';
import {
  BASE,
  gate,
  messageStates,
  placeOrder,
  sendTestEvent,
  startSlowReceiver,
  subscribe,
  verify,
  type Envelope,
  type SlowReceiver,
} from './outbound-webhooks.helpers.ts';

interface MessageView {
  message_id: string;
  subscription_id: number;
  event_id: number | null;
  event_type: string;
  order_id: number | null;
  status: string;
  body: string;
  headers: Record<string, string> | null;
  created_at: string;
  settled_at: string | null;
  attempts: {
    attempt: number;
    created_at: string;
    status_code: number | null;
    duration_ms: number | null;
    success: boolean;
    error: string | null;
    response_body: string | null;
    headers: Record<string, string> | null;
  }[];
}

interface DeliveryItem {
  message_id: string;
  message_status: string | null;
  order_id: number | null;
  event_type: string;
  error: string | null;
  attempt: number;
  success: boolean;
}

/**
 * Recovering after a receiver's outage, resending one message, reading what was sent, and the
 * delivery log's filters. A short retry schedule: one retry 0.2 s after the first attempt.
 */
describe('outgoing webhooks: recover, resend, message view, delivery log filters', () => {
  let app: FastifyInstance;
  let productId: number;
  const receivers: SlowReceiver[] = [];

  async function receiver(port = 0): Promise<SlowReceiver> {
    const r = await startSlowReceiver('/hook', port);
    receivers.push(r);
    return r;
  }

  const message = async (who: TestUser, subscriptionId: number, messageId: string) => {
    const res = await api(app, who, { method: 'GET', url: `${BASE}/${subscriptionId}/messages/${messageId}` });
    assert.equal(res.statusCode, 200, res.body);
    return res.json<MessageView>();
  };
  const deliveries = async (who: TestUser, subscriptionId: number, query = '') => {
    const res = await api(app, who, { method: 'GET', url: `${BASE}/${subscriptionId}/deliveries?page_size=100${query}` });
    assert.equal(res.statusCode, 200, res.body);
    return res.json<{ items: DeliveryItem[]; total: number; has_next: boolean }>();
  };
  const resend = (who: TestUser, subscriptionId: number, messageId: string) =>
    api(app, who, { method: 'POST', url: `${BASE}/${subscriptionId}/messages/${messageId}/resend` });
  const recover = (who: TestUser, subscriptionId: number, since: unknown) =>
    api(app, who, { method: 'POST', url: `${BASE}/${subscriptionId}/recover`, payload: { since } });
  /** waits until every message of the subscription is settled; returns their states */
  const settled = (subscriptionId: number, count: number) =>
    waitFor(async () => {
      const states = await messageStates(app, subscriptionId);
      return states.size === count && [...states.values()].every((s) => s === 'delivered' || s === 'failed') ? states : undefined;
    }, 30000);

  before(async () => {
    app = await buildTestApp(undefined, { webhookRetrySchedule: [0.2] });
    productId = (await seedProduct(app, 'RECOVER-1', { price: '5.00', stock: 100000 })).id;
  });
  after(async () => {
    await app.close();
    for (const r of receivers) await r.close();
  });

  it('after an outage longer than the retry schedule, recover delivers every event exactly once more, in sequence per order', async () => {
    const user = await createUser(app);
    // the receiver is down: nothing listens on its port
    const probe = await receiver();
    const port = Number(new URL(probe.url).port);
    await probe.close();
    const sub = await subscribe(app, user, probe.url);
    const since = new Date();
    const orders = [await placeOrder(app, user, productId), await placeOrder(app, user, productId)];
    const states = await settled(sub.id, 6);
    assert.deepEqual([...new Set(states.values())], ['failed'], 'every message used up its attempts');
    const log = await deliveries(user, sub.id);
    assert.equal(log.total, 12, 'two attempts per message');
    assert.ok(log.items.every((d) => d.error === 'connection refused'), JSON.stringify(log.items.map((d) => d.error)));
    assert.equal((await recover(user, sub.id, new Date().toISOString())).json<{ queued: number }>().queued, 0, 'nothing failed after now');

    const back = await receiver(port);
    const res = await recover(user, sub.id, since.toISOString());
    assert.equal(res.statusCode, 202, res.body);
    assert.deepEqual(res.json(), { status: 'queued', message: '6 messages queued for delivery', queued: 6, since: since.toISOString() });
    const after = await settled(sub.id, 6);
    assert.deepEqual([...new Set(after.values())], ['delivered']);
    assert.equal(back.hits.length, 6, 'each message exactly once');
    assert.deepEqual(new Set(back.hits.map((h) => h.id)), new Set(states.keys()));
    const sequences = new Map<number, number[]>();
    for (const hit of back.hits) {
      const envelope: Envelope = verify(sub.secret, hit);
      sequences.set(envelope.data.order_id, [...(sequences.get(envelope.data.order_id) ?? []), envelope.data.sequence]);
    }
    assert.deepEqual(Object.fromEntries(sequences), { [orders[0]]: [1, 2, 3], [orders[1]]: [1, 2, 3] });
    // attempts go on counting; the schedule started again for the recovered round
    const view = await message(user, sub.id, back.hits[0].id);
    assert.deepEqual(view.attempts.map((a) => [a.attempt, a.success]), [[1, false], [2, false], [3, true]]);
    assert.equal((await recover(user, sub.id, since.toISOString())).json<{ queued: number }>().queued, 0, 'a recovered message is not failed any more');
  });

  it('resend sends a delivered message again with the same webhook-id, after an earlier pending message of its order', async () => {
    const user = await createUser(app);
    const r = await receiver();
    const sub = await subscribe(app, user, r.url);
    const orderId = await placeOrder(app, user, productId);
    await settled(sub.id, 3);
    assert.equal(r.hits.length, 3);
    const [first, second, third] = r.hits;

    // the second event's resend is held in flight, then refused: the third's resend must wait for it
    const holdSecond = gate();
    r.respond = async (hit) => {
      if (hit.id !== second.id) return { status: 200 };
      await holdSecond.opened;
      return { status: 503 };
    };
    const resentSecond = await resend(user, sub.id, second.id);
    assert.equal(resentSecond.statusCode, 202, resentSecond.body);
    assert.deepEqual(resentSecond.json(), { status: 'queued', message: 'Message queued for delivery', message_id: second.id });
    await waitFor(async () => (r.hits.length === 4 ? true : undefined));
    const resentThird = await resend(user, sub.id, third.id);
    assert.equal(resentThird.statusCode, 202, resentThird.body);
    assert.match(resentThird.json<{ message: string }>().message, /after the earlier pending messages of its order/);
    const again = await resend(user, sub.id, second.id);
    assert.equal(again.statusCode, 400, 'a pending message cannot be resent');
    assert.equal(errorBody(again).error_code, 'INVALID_STATE');
    holdSecond.open();

    await waitFor(async () => (r.hits.filter((h) => h.id === third.id).length === 2 ? true : undefined));
    const secondHits = r.hits.flatMap((h, i) => (h.id === second.id ? [i] : []));
    const thirdHits = r.hits.flatMap((h, i) => (h.id === third.id ? [i] : []));
    assert.equal(secondHits.length, 3, 'delivered once, then two attempts of the resend');
    assert.ok(thirdHits[1] > secondHits[2], 'the third event waited until the second settled');
    assert.equal(r.hits.filter((h) => h.id === first.id).length, 1, 'the first event was not sent again');

    const resentHit = r.hits[thirdHits[1]];
    assert.equal(resentHit.headers['webhook-id'], third.id, 'same webhook-id');
    assert.equal(resentHit.body, third.body, 'same body');
    const envelope = verify(sub.secret, resentHit);
    assert.deepEqual([envelope.data.order_id, envelope.data.sequence], [orderId, 3]);
    assert.ok(Number(resentHit.headers['webhook-timestamp']) >= Number(third.headers['webhook-timestamp']));
    const views = await waitFor(async () => {
      const v = [await message(user, sub.id, second.id), await message(user, sub.id, third.id)];
      return v[0].status === 'failed' && v[1].status === 'delivered' ? v : undefined;
    });
    assert.deepEqual(views[0].attempts.map((a) => [a.attempt, a.status_code]), [[1, 200], [2, 503], [3, 503]]);
    assert.deepEqual(views[1].attempts.map((a) => [a.attempt, a.status_code]), [[1, 200], [2, 200]]);

    // a failed message can be resent too
    r.respond = () => ({ status: 200 });
    assert.equal((await resend(user, sub.id, second.id)).statusCode, 202);
    await waitFor(async () => ((await message(user, sub.id, second.id)).status === 'delivered' ? true : undefined));
  });

  it('the message view shows the exact body and headers sent, and every attempt with the first KiB of the response', async () => {
    const user = await createUser(app);
    const r = await receiver();
    r.respond = (_hit, i) => (i === 0 ? { status: 500, body: 'x'.repeat(3000) } : { status: 200, body: 'thanks' });
    const sub = await subscribe(app, user, r.url);
    const messageId = await sendTestEvent(app, user, sub.id);
    await settled(sub.id, 1);
    const view = await message(user, sub.id, messageId);
    assert.deepEqual(Object.keys(view).sort(), ['attempts', 'body', 'created_at', 'event_id', 'event_type', 'headers', 'message_id', 'order_id', 'settled_at', 'status', 'subscription_id']);
    assert.equal(view.message_id, messageId);
    assert.equal(view.subscription_id, sub.id);
    assert.equal(view.event_type, 'webhook.test');
    assert.equal(view.order_id, null);
    assert.equal(view.status, 'delivered');
    assert.ok(view.settled_at);
    assert.equal(view.body, r.hits[1].body, 'the exact body sent');
    const sent = (i: number) =>
      Object.fromEntries(['content-type', 'user-agent', 'webhook-id', 'webhook-signature', 'webhook-timestamp'].map((h) => [h, String(r.hits[i].headers[h])]));
    assert.deepEqual(view.headers, sent(1), 'the headers of the latest attempt, signature included');
    assert.equal(view.attempts.length, 2);
    const [failed, ok] = view.attempts;
    assert.deepEqual(Object.keys(failed).sort(), ['attempt', 'created_at', 'duration_ms', 'error', 'headers', 'response_body', 'status_code', 'success']);
    assert.deepEqual([failed.attempt, failed.status_code, failed.success], [1, 500, false]);
    assert.equal(failed.response_body, 'x'.repeat(1024), 'the first KiB of the response');
    assert.match(failed.error ?? '', /^HTTP 500: x+$/);
    assert.deepEqual(failed.headers, sent(0));
    assert.equal(typeof failed.duration_ms, 'number');
    assert.ok(!Number.isNaN(Date.parse(failed.created_at)));
    assert.deepEqual([ok.attempt, ok.status_code, ok.success, ok.error, ok.response_body], [2, 200, true, null, 'thanks']);

    const other = await subscribe(app, user, `${r.url}/other`);
    const missing = await api(app, user, { method: 'GET', url: `${BASE}/${other.id}/messages/${messageId}` });
    assert.deepEqual([missing.statusCode, errorBody(missing)], [404, { detail: 'Message not found', error_code: 'NOT_FOUND' }], 'a message of another subscription');
    const malformed = await api(app, user, { method: 'GET', url: `${BASE}/${sub.id}/messages/not-a-message` });
    assert.equal(malformed.statusCode, 422);
    const stranger = await createUser(app);
    for (const req of [
      { method: 'GET' as const, url: `${BASE}/${sub.id}/messages/${messageId}` },
      { method: 'POST' as const, url: `${BASE}/${sub.id}/messages/${messageId}/resend` },
      { method: 'POST' as const, url: `${BASE}/${sub.id}/recover`, payload: { since: new Date(0).toISOString() } },
    ]) {
      const res = await api(app, stranger, req);
      assert.equal(res.statusCode, 403, `${req.method} ${req.url}`);
      const gone = await api(app, user, { ...req, url: req.url.replace(`/${sub.id}/`, '/999999/') });
      assert.deepEqual(errorBody(gone), { detail: 'Subscription not found', error_code: 'NOT_FOUND' });
    }
    assert.equal((await resend(user, sub.id, 'msg_0_0')).statusCode, 404);
  });

  it('the delivery log filters on the message state, the event type and the order', async () => {
    const user = await createUser(app);
    const r = await receiver();
    const hold = gate();
    let mode: 'fail' | 'pending' = 'fail';
    const behaviour = new Map<string, 'fail' | 'pending'>();
    r.respond = async (hit) => {
      if ((JSON.parse(hit.body) as Envelope).type !== 'webhook.test') return { status: 200 };
      if (!behaviour.has(hit.id)) behaviour.set(hit.id, mode);
      if (behaviour.get(hit.id) === 'fail' || r.hits.filter((h) => h.id === hit.id).length === 1) return { status: 500 };
      await hold.opened; // the retry of the pending message stays in flight
      return { status: 200 };
    };
    const sub = await subscribe(app, user, r.url);
    const orderId = await placeOrder(app, user, productId);
    const failing = await sendTestEvent(app, user, sub.id);
    await settled(sub.id, 4);
    mode = 'pending';
    const pending = await sendTestEvent(app, user, sub.id);
    await waitFor(async () => (r.hits.filter((h) => h.id === pending).length === 2 ? true : undefined));

    const all = await deliveries(user, sub.id);
    assert.equal(all.total, 6);
    const pick = (items: DeliveryItem[]) => items.map((d) => [d.message_status, d.event_type, d.order_id, d.success]);
    const delivered = await deliveries(user, sub.id, '&status=delivered');
    assert.equal(delivered.total, 3);
    assert.ok(pick(delivered.items).every(([s, , o, ok]) => s === 'delivered' && o === orderId && ok === true), JSON.stringify(delivered.items));
    const failed = await deliveries(user, sub.id, '&status=failed');
    assert.deepEqual(pick(failed.items), [
      ['failed', 'webhook.test', null, false],
      ['failed', 'webhook.test', null, false],
    ]);
    assert.ok(failed.items.every((d) => d.message_id === failing));
    const pendingLog = await deliveries(user, sub.id, '&status=pending');
    assert.deepEqual(pick(pendingLog.items), [['pending', 'webhook.test', null, false]]);
    assert.equal(pendingLog.items[0].message_id, pending);
    assert.equal((await deliveries(user, sub.id, '&event_type=order.created')).total, 1);
    assert.equal((await deliveries(user, sub.id, '&event_type=order.status_changed')).total, 2);
    assert.equal((await deliveries(user, sub.id, '&event_type=webhook.test')).total, 3);
    assert.equal((await deliveries(user, sub.id, `&order_id=${orderId}`)).total, 3);
    assert.equal((await deliveries(user, sub.id, `&order_id=${orderId}&event_type=order.status_changed`)).total, 2);
    assert.equal((await deliveries(user, sub.id, `&order_id=${orderId}&status=failed`)).total, 0);
    assert.equal((await deliveries(user, sub.id, '&order_id=999999')).total, 0);
    const paged = await api(app, user, { method: 'GET', url: `${BASE}/${sub.id}/deliveries?status=delivered&page_size=2` });
    assert.deepEqual([paged.json().total, paged.json().items.length, paged.json().has_next], [3, 2, true]);
    for (const q of ['status=queued', 'status=', 'event_type=order.deleted', 'order_id=0', 'order_id=abc']) {
      const bad = await api(app, user, { method: 'GET', url: `${BASE}/${sub.id}/deliveries?${q}` });
      assert.equal(bad.statusCode, 422, q);
    }
    hold.open();
    await settled(sub.id, 5);
    assert.equal((await deliveries(user, sub.id, '&status=pending')).total, 0);
  });

  it('recover and resend refuse a disabled subscription; recover needs an ISO 8601 time', async () => {
    const user = await createUser(app);
    const r = await receiver();
    const sub = await subscribe(app, user, r.url);
    const messageId = await sendTestEvent(app, user, sub.id);
    await settled(sub.id, 1);
    for (const since of [undefined, '', 'yesterday', '2026-13-01T00:00:00Z', 12345]) {
      const res = await recover(user, sub.id, since);
      assert.equal(res.statusCode, 422, `since=${String(since)}: ${res.body}`);
    }
    assert.equal((await recover(user, sub.id, '2020-01-01T00:00:00+02:00')).statusCode, 202);
    await api(app, user, { method: 'PATCH', url: `${BASE}/${sub.id}`, payload: { is_active: false } });
    for (const res of [await recover(user, sub.id, new Date(0).toISOString()), await resend(user, sub.id, messageId)]) {
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(errorBody(res).error_code, 'INVALID_STATE');
      assert.match(errorBody(res).detail, /disabled; enable it before/);
    }
    await api(app, user, { method: 'PATCH', url: `${BASE}/${sub.id}`, payload: { is_active: true } });
    assert.equal((await resend(user, sub.id, messageId)).statusCode, 202);
    await waitFor(async () => (r.hits.length === 2 ? true : undefined));
  });
});
