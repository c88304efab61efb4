import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { Value } from 'typebox/value';
import { api, buildTestApp, createUser, errorBody, waitFor, type TestUser } from '../../helpers/app.ts';
import { seedProduct } from '../../helpers/webhooks.ts';
import { eventTypeSchema } from '../../../src/modules/outbound-webhooks/event-types.ts';
import type { WebhookEventType } from '../../../src/modules/outbound-webhooks/message-rendering.ts';
import { BASE, placeOrder, startSlowReceiver, subscribe, verify, type SlowReceiver } from './outbound-webhooks.helpers.ts';

const V2 = '/api/v2/webhooks/subscriptions';

interface Attempt {
  attempt: number;
  success: boolean;
  status_code: number | null;
  error: string | null;
}
interface MessageItem {
  message_id: string;
  event_type: string;
  order_id: number | null;
  status: string;
  attempts: Attempt[];
}
interface MessagePage {
  items: MessageItem[];
  total: number;
  total_exact: boolean;
  has_next: boolean;
}
interface Stats {
  bucket: string;
  from: string;
  to: string;
  succeeded: number;
  failed: number;
  success_rate: number | null;
  buckets: { start: string; succeeded: number; failed: number; success_rate: number | null }[];
}

/**
 * The subscriber portal's API (decision 145): a subscription's messages with their attempts nested,
 * filtered by event type and state; its delivery success per hour or day; the event-type catalogue
 * whose schemas the real messages meet; a test send of a chosen event type. A real receiver on
 * 127.0.0.1 answers 500 to the move to `processing`, so that message fails after its two attempts.
 */
describe('subscriber portal: messages with their attempts, delivery success, event types, test send of a type', () => {
  let app: FastifyInstance;
  let owner: TestUser;
  let stranger: TestUser;
  let receiver: SlowReceiver;
  let sub: { id: number; secret: string };
  let orderId: number;

  before(async () => {
    receiver = await startSlowReceiver();
    receiver.respond = (hit) => (hit.body.includes('"status":"processing"') ? { status: 500, body: 'receiver says boom' } : { status: 200, body: 'ok' });
    app = await buildTestApp(undefined, { webhookRetrySchedule: [0.05] });
    owner = await createUser(app);
    stranger = await createUser(app);
    const productId = (await seedProduct(app, 'PORTAL-1', { stock: 100 })).id;
    const res = await api(app, owner, { method: 'POST', url: V2, payload: { url: receiver.url, events: ['order.created', 'order.status_changed', 'order.cancelled'] } });
    assert.equal(res.statusCode, 201, res.body);
    sub = res.json();
    orderId = await placeOrder(app, owner, productId);
    // created, processing (failed after 2 attempts), completed: every message settled
    await waitFor(async () => {
      const page = await list('');
      return page.items.length === 3 && page.items.every((m) => m.status !== 'pending') ? true : undefined;
    });
  });
  after(async () => {
    await app.close();
    await receiver.close();
  });

  async function list(query: string, who = owner): Promise<MessagePage> {
    const res = await api(app, who, { method: 'GET', url: `${V2}/${sub.id}/messages${query}` });
    assert.equal(res.statusCode, 200, res.body);
    return res.json<MessagePage>();
  }

  it('lists the messages newest first, each with its attempts under it, oldest first', async () => {
    const page = await list('');
    assert.equal(page.total, 3);
    assert.equal(page.total_exact, true);
    assert.deepEqual(
      page.items.map((m) => [m.event_type, m.order_id, m.status, m.attempts.map((a) => a.attempt)]),
      [
        ['order.status_changed', orderId, 'delivered', [1]],
        ['order.status_changed', orderId, 'failed', [1, 2]],
        ['order.created', orderId, 'delivered', [1]],
      ],
    );
    const failed = page.items[1];
    assert.ok(failed.attempts.every((a) => !a.success && a.status_code === 500 && a.error === 'HTTP 500: receiver says boom'));
    const second = await list('?page=2&page_size=1');
    assert.equal(second.items[0].message_id, failed.message_id);
    assert.equal(second.has_next, true);
  });

  it('filters by event type and state: the failed message of order.status_changed alone', async () => {
    const page = await list('?event_type=order.status_changed&status=failed');
    assert.equal(page.total, 1);
    assert.equal(page.items[0].attempts.length, 2);
    assert.deepEqual((await list('?event_type=order.created')).items.map((m) => m.status), ['delivered']);
    assert.deepEqual((await list('?status=pending')).items, []);
    assert.equal((await list('?event_type=order.cancelled')).total, 0);
    for (const query of ['?status=held', '?event_type=order.deleted', '?page_size=101']) {
      const res = await api(app, owner, { method: 'GET', url: `${V2}/${sub.id}/messages${query}` });
      assert.equal(res.statusCode, 422, query);
      assert.equal(errorBody(res).error_code, 'VALIDATION_ERROR');
    }
  });

  it("is the owner's alone, and v2 only", async () => {
    assert.equal((await api(app, stranger, { method: 'GET', url: `${V2}/${sub.id}/messages` })).statusCode, 403);
    assert.equal((await api(app, stranger, { method: 'GET', url: `${V2}/${sub.id}/stats` })).statusCode, 403);
    assert.equal((await api(app, owner, { method: 'GET', url: `${V2}/999999/messages` })).statusCode, 404);
    assert.equal((await api(app, null, { method: 'GET', url: `${V2}/${sub.id}/messages` })).statusCode, 401);
    assert.equal((await api(app, owner, { method: 'GET', url: `${BASE}/${sub.id}/messages` })).statusCode, 404);
    assert.equal((await api(app, owner, { method: 'GET', url: `${BASE}/${sub.id}/stats` })).statusCode, 404);
    assert.equal((await api(app, owner, { method: 'GET', url: '/api/v1/webhooks/event-types' })).statusCode, 404);
  });

  it('counts the attempts per hour and per day by outcome, every bucket present', async () => {
    const get = async (query: string) => {
      const res = await api(app, owner, { method: 'GET', url: `${V2}/${sub.id}/stats${query}` });
      assert.equal(res.statusCode, 200, res.body);
      return res.json<Stats>();
    };
    const hourly = await get('');
    assert.equal(hourly.bucket, 'hour');
    // the default range: 24 hours back from now, its start aligned down to the hour
    assert.equal(hourly.buckets.length, 25);
    for (const [i, b] of hourly.buckets.entries()) assert.equal(Date.parse(b.start), Date.parse(hourly.from) + i * 3600_000);
    assert.deepEqual([hourly.succeeded, hourly.failed, hourly.success_rate], [2, 2, 0.5]);
    assert.equal(hourly.buckets.reduce((n, b) => n + b.succeeded + b.failed, 0), 4);
    assert.ok(hourly.buckets.some((b) => b.success_rate === null));

    const daily = await get('?bucket=day');
    assert.equal(daily.buckets.length, 31);
    assert.equal(daily.buckets.at(-1)!.succeeded + daily.buckets.at(-2)!.succeeded, 2);

    const to = new Date(Date.parse(hourly.to) - 2 * 86400_000).toISOString();
    assert.deepEqual([(await get(`?to=${encodeURIComponent(to)}`)).succeeded, (await get(`?to=${encodeURIComponent(to)}`)).success_rate], [0, null]);

    const bad = [`?from=${encodeURIComponent(hourly.to)}&to=${encodeURIComponent(hourly.from)}`, '?from=2020-01-01T00:00:00Z&to=2020-03-01T00:00:00Z', '?bucket=week'];
    for (const query of bad) {
      const res = await api(app, owner, { method: 'GET', url: `${V2}/${sub.id}/stats${query}` });
      assert.equal(res.statusCode, 422, `${query}: ${res.body}`);
      assert.equal(errorBody(res).error_code, 'VALIDATION_ERROR');
    }
  });

  it('catalogues the event types for any signed-in user; samples and the real messages meet their schemas', async () => {
    assert.equal((await api(app, null, { method: 'GET', url: '/api/v2/webhooks/event-types' })).statusCode, 401);
    const res = await api(app, stranger, { method: 'GET', url: '/api/v2/webhooks/event-types' });
    assert.equal(res.statusCode, 200, res.body);
    const items = res.json<{ items: { name: WebhookEventType; description: string; schema: object; example: { type: string } }[] }>().items;
    assert.deepEqual(items.map((t) => t.name), ['order.created', 'order.status_changed', 'order.cancelled', 'webhook.test']);
    for (const t of items) {
      assert.ok(t.description.length > 0);
      assert.equal(t.example.type, t.name);
      assert.ok(Value.Check(t.schema, t.example), t.name);
      assert.deepEqual(t.schema, JSON.parse(JSON.stringify(eventTypeSchema(t.name))));
    }
    const failedMove = items.find((t) => t.name === 'order.status_changed')!.example as unknown as { data: { status: string; reason: string } };
    assert.deepEqual([failedMove.data.status, failedMove.data.reason], ['failed', 'INSUFFICIENT_STOCK']);
    assert.ok(receiver.hits.length >= 4);
    for (const hit of receiver.hits) {
      const body = JSON.parse(hit.body) as { type: WebhookEventType };
      assert.ok(Value.Check(eventTypeSchema(body.type), body), hit.body);
    }
  });

  it('sends a sample of the chosen event type, signed, in the subscription\'s rendering; without one, webhook.test', async () => {
    const send = async (url: string, payload?: object) => {
      const res = await api(app, owner, { method: 'POST', url, ...(payload ? { payload } : {}) });
      assert.equal(res.statusCode, 202, res.body);
      return res.json<{ message_id: string }>().message_id;
    };
    const received = (id: string) => waitFor(async () => receiver.hits.find((h) => h.id === id));

    const chosen = await send(`${V2}/${sub.id}/test`, { event_type: 'order.cancelled' });
    const envelope = verify(sub.secret, await received(chosen)) as unknown as { id: string; type: string; data: { status: string } };
    assert.match(envelope.id, /^evt_test_/);
    assert.deepEqual([envelope.type, envelope.data.status], ['order.cancelled', 'cancelled']);
    const listed = await waitFor(async () => {
      const page = await list('?event_type=order.cancelled&status=delivered');
      return page.items.length === 1 ? page.items[0] : undefined;
    });
    assert.deepEqual([listed.message_id, listed.order_id], [chosen, null]);

    assert.equal(verify(sub.secret, await received(await send(`${V2}/${sub.id}/test`))).type, 'webhook.test');
    // v1 takes no body: a test send there is webhook.test, as before
    assert.equal(verify(sub.secret, await received(await send(`${BASE}/${sub.id}/test`, { event_type: 'order.created' }))).type, 'webhook.test');

    // a v1 subscription has no order.cancelled, and renders a cancellation as a move to failed
    const v1 = await subscribe(app, owner, `${receiver.url}?v1`);
    const refused = await api(app, owner, { method: 'POST', url: `${V2}/${v1.id}/test`, payload: { event_type: 'order.cancelled' } });
    assert.equal(refused.statusCode, 422, refused.body);
    assert.deepEqual(errorBody(refused).errors?.map((e) => (e as { loc: string[] }).loc), [['body', 'event_type']]);
    const unknown = await api(app, owner, { method: 'POST', url: `${V2}/${sub.id}/test`, payload: { event_type: 'order.deleted' } });
    assert.equal(unknown.statusCode, 422, unknown.body);
  });
});
