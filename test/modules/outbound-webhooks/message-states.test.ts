import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, waitFor, type TestUser } from '../../helpers/app.ts';
import { seedProduct } from '../../helpers/webhooks.ts';
import { BASE, gate, messageStates, placeOrder, startSlowReceiver, subscribe, type SlowReceiver } from './outbound-webhooks.helpers.ts';

interface TraceMessage {
  message_id: string;
  status: string;
  trace_id: string | null;
}
interface Trace {
  trace_id: string | null;
  deliveries: { subscription_id: number; messages: TraceMessage[] }[];
}

/**
 * One vocabulary for a message's state in /api/v2 (the admin trace, the delivery log, the message
 * detail), and the pending messages of a subscription that is disabled or deleted settle `failed`
 * in that request's transaction, not at their next attempt (the retry here is 300 s away).
 */
describe('message states: pending, delivered, failed; a disabled or deleted subscription settles its pending messages at once', () => {
  let app: FastifyInstance;
  let admin: TestUser;
  let receiver: SlowReceiver;
  let productId: number;

  before(async () => {
    receiver = await startSlowReceiver();
    // every attempt fails: the first message of each order waits for its retry, the later ones are held behind it
    receiver.respond = () => ({ status: 500, body: 'down' });
    app = await buildTestApp(undefined, { webhookRetrySchedule: [300, 300] });
    admin = await createUser(app, { admin: true });
    productId = (await seedProduct(app, 'STATES-1', { stock: 100 })).id;
  });
  after(async () => {
    await app.close();
    await receiver.close();
  });

  const traceOf = async (version: 'v1' | 'v2', orderId: number, subscriptionId: number) => {
    const res = await api(app, admin, { method: 'GET', url: `/api/${version}/admin/orders/${orderId}/trace` });
    assert.equal(res.statusCode, 200, res.body);
    const t = res.json<Trace>();
    return { traceId: t.trace_id, messages: t.deliveries.find((d) => d.subscription_id === subscriptionId)?.messages ?? [] };
  };

  /** An order whose first message has failed its first attempt and waits 300 s for the next; the others are held. */
  async function orderWaitingForRetry(subscriptionId: number): Promise<number> {
    const orderId = await placeOrder(app, admin, productId);
    await waitFor(async () => {
      const states = [...(await messageStates(app, subscriptionId)).values()];
      const attempts = await app.ctx.db.selectFrom('webhook_deliveries').select('id').where('subscription_id', '=', subscriptionId).execute();
      return states.length === 3 && attempts.length === 1 ? true : undefined;
    });
    return orderId;
  }

  it('v2 names held and queued messages pending, as its delivery log and message detail do; v1 keeps held and queued', async () => {
    const sub = await subscribe(app, admin, receiver.url);
    const orderId = await orderWaitingForRetry(sub.id);

    const v2 = await traceOf('v2', orderId, sub.id);
    assert.deepEqual(v2.messages.map((m) => m.status), ['pending', 'pending', 'pending']);
    // tracing is off in this process: nothing to look up in a back end
    assert.equal(v2.traceId, null);
    assert.ok(v2.messages.every((m) => m.trace_id === null));
    const v1 = await traceOf('v1', orderId, sub.id);
    assert.deepEqual(v1.messages.map((m) => m.status), ['queued', 'held', 'held']);

    const log = await api(app, admin, { method: 'GET', url: `/api/v2/webhooks/subscriptions/${sub.id}/deliveries?status=pending&order_id=${orderId}` });
    assert.equal(log.statusCode, 200, log.body);
    const entries = log.json<{ items: { message_id: string; message_status: string }[] }>().items;
    assert.deepEqual(entries.map((e) => [e.message_id, e.message_status]), [[v2.messages[0].message_id, 'pending']]);
    const detail = await api(app, admin, { method: 'GET', url: `/api/v2/webhooks/subscriptions/${sub.id}/messages/${v2.messages[0].message_id}` });
    assert.equal(detail.json<{ status: string }>().status, 'pending');
  });

  for (const how of ['disabled', 'deleted'] as const) {
    it(`a ${how} subscription's pending messages are failed when the request answers`, async () => {
      const sub = await subscribe(app, admin, `${receiver.url}?${how}`);
      const orderId = await orderWaitingForRetry(sub.id);
      const res =
        how === 'disabled'
          ? await api(app, admin, { method: 'PATCH', url: `/api/v2/webhooks/subscriptions/${sub.id}`, payload: { is_active: false } })
          : await api(app, admin, { method: 'DELETE', url: `/api/v2/webhooks/subscriptions/${sub.id}` });
      assert.equal(res.statusCode, how === 'disabled' ? 200 : 204, res.body);

      // no waiting: the request's own transaction settled them
      assert.deepEqual([...(await messageStates(app, sub.id)).values()], ['failed', 'failed', 'failed']);
      const v2 = await traceOf('v2', orderId, sub.id);
      assert.deepEqual(v2.messages.map((m) => m.status), ['failed', 'failed', 'failed']);
      const rows = await app.ctx.db.selectFrom('webhook_messages').select(['last_error', 'settled_at']).where('subscription_id', '=', sub.id).execute();
      for (const r of rows) {
        assert.equal(r.last_error, 'subscription is disabled or deleted');
        assert.ok(r.settled_at !== null);
      }
      if (how === 'disabled') {
        const log = await api(app, admin, { method: 'GET', url: `${BASE}/${sub.id}/deliveries?status=failed` });
        assert.equal(log.json<{ items: unknown[] }>().items.length, 1, 'the one attempt made, its message now failed');
      }
    });
  }

  it('the service disabling a subscription (410 Gone) fails its held messages in that transaction', async (t) => {
    const gone = await startSlowReceiver();
    t.after(() => gone.close());
    // the answer waits until the order's three messages exist (the two later ones held behind the first)
    const answer = gate();
    gone.respond = async () => {
      await answer.opened;
      return { status: 410, body: 'gone' };
    };
    const sub = await subscribe(app, admin, gone.url);
    await placeOrder(app, admin, productId);
    await waitFor(async () => ((await messageStates(app, sub.id)).size === 3 ? true : undefined));
    answer.open();
    const states = await waitFor(async () => {
      const s = [...(await messageStates(app, sub.id)).values()];
      return s.length === 3 && s.every((x) => x === 'failed') ? s : undefined;
    });
    assert.deepEqual(states, ['failed', 'failed', 'failed']);
    // one attempt, the one answered 410; the held messages were never sent
    assert.equal(gone.hits.length, 1);
    const rows = await app.ctx.db.selectFrom('webhook_messages').select(['attempts', 'last_error']).where('subscription_id', '=', sub.id).orderBy('id').execute();
    assert.deepEqual(rows.map((r) => r.attempts), [1, 0, 0]);
    assert.deepEqual(rows.slice(1).map((r) => r.last_error), ['subscription is disabled or deleted', 'subscription is disabled or deleted']);
  });
});
