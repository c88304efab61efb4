import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { ProductRow } from '../../../src/modules/products/products.tables.ts';
import { api, buildTestApp, createUser, errorBody, waitFor, type TestUser } from '../../helpers/app.ts';
import { createProduct } from '../../helpers/products.ts';
import { waitForFinal } from '../../helpers/orders.ts';
import { cancel } from '../orders/cancel.helpers.ts';
import { placeOrder, startSlowReceiver, verify, type SlowReceiver } from './outbound-webhooks.helpers.ts';

interface Delivered {
  id: string;
  type: string;
  data: { order_id: number; sequence: number; previous_status: string | null; status: string; reason?: string | null; details?: unknown };
}

describe('subscriptions carry the API version they were created under', () => {
  let app: FastifyInstance;
  let alice: TestUser;
  let product: ProductRow;
  let v1Receiver: SlowReceiver;
  let v2Receiver: SlowReceiver;

  const subscribe = async (version: 'v1' | 'v2', url: string, events: string[]) =>
    api(app, alice, { method: 'POST', url: `/api/${version}/webhooks/subscriptions`, payload: { url, events } });

  before(async () => {
    v1Receiver = await startSlowReceiver('/v1-hook');
    v2Receiver = await startSlowReceiver('/v2-hook');
    app = await buildTestApp(undefined, { webhookRetrySchedule: [0.2] });
    alice = await createUser(app);
    product = await createProduct(app, { stock: 100 });
  });
  after(async () => {
    await app.close();
    await v1Receiver.close();
    await v2Receiver.close();
  });

  it('a v1 subscription cannot take order.cancelled (422, also when changed through v2); reads show the version in v2', async () => {
    const refused = await subscribe('v1', `${v1Receiver.url}?refused`, ['order.status_changed', 'order.cancelled']);
    assert.equal(refused.statusCode, 422);
    assert.equal(errorBody(refused).error_code, 'VALIDATION_ERROR');

    const v1 = await subscribe('v1', `${v1Receiver.url}?probe`, ['order.status_changed']);
    assert.equal(v1.statusCode, 201, v1.body);
    const id = v1.json<{ id: number }>().id;
    assert.equal('api_version' in v1.json<object>(), false, 'v1 reads keep their fields');
    const patched = await api(app, alice, { method: 'PATCH', url: `/api/v2/webhooks/subscriptions/${id}`, payload: { events: ['order.cancelled'] } });
    assert.equal(patched.statusCode, 422, patched.body);
    const body = errorBody(patched);
    assert.equal(body.error_code, 'VALIDATION_ERROR');
    assert.deepEqual((body.errors as { loc: unknown[] }[])[0].loc, ['body', 'events', 0]);
    const read = await api(app, alice, { method: 'GET', url: `/api/v2/webhooks/subscriptions/${id}` });
    assert.equal(read.json<{ api_version: string }>().api_version, 'v1');
    assert.equal((await api(app, alice, { method: 'DELETE', url: `/api/v2/webhooks/subscriptions/${id}` })).statusCode, 204);
  });

  it('each receives its version of a cancellation, signed: v1 a move to failed (CANCELLED), v2 cancelled and order.cancelled', async () => {
    const v1 = await subscribe('v1', v1Receiver.url, ['order.created', 'order.status_changed']);
    assert.equal(v1.statusCode, 201, v1.body);
    const v2 = await subscribe('v2', v2Receiver.url, ['order.created', 'order.status_changed', 'order.cancelled']);
    assert.equal(v2.statusCode, 201, v2.body);
    const v2Body = v2.json<{ secret: string; api_version: string }>();
    assert.equal(v2Body.api_version, 'v2');
    const v1Secret = v1.json<{ secret: string }>().secret;

    const orderId = await placeOrder(app, alice, product.id);
    assert.equal((await waitForFinal(app, orderId)).status, 'completed');
    const res = await cancel(app, alice, orderId, { reason: 'wrong size' });
    assert.equal(res.statusCode, 200, res.body);

    await waitFor(async () => (v1Receiver.hits.length >= 4 && v2Receiver.hits.length >= 5 ? true : undefined), 30000);
    const v1Got = v1Receiver.hits.map((h) => verify(v1Secret, h) as unknown as Delivered);
    const v2Got = v2Receiver.hits.map((h) => verify(v2Body.secret, h) as unknown as Delivered);

    assert.deepEqual(
      v1Got.map((e) => [e.type, e.data.sequence, e.data.previous_status, e.data.status]),
      [
        ['order.created', 1, null, 'pending'],
        ['order.status_changed', 2, 'pending', 'processing'],
        ['order.status_changed', 3, 'processing', 'completed'],
        ['order.status_changed', 4, 'completed', 'failed'],
      ],
    );
    assert.equal(v1Got[3].data.reason, 'CANCELLED');
    assert.equal(v1Got[3].data.details, null);
    for (const hit of v1Receiver.hits) assert.doesNotMatch(hit.body, /cancelled/, 'a v1 subscription never reads cancelled');

    assert.deepEqual(
      v2Got.map((e) => [e.type, e.data.sequence, e.data.previous_status, e.data.status]),
      [
        ['order.created', 1, null, 'pending'],
        ['order.status_changed', 2, 'pending', 'processing'],
        ['order.status_changed', 3, 'processing', 'completed'],
        ['order.status_changed', 4, 'completed', 'cancelled'],
        ['order.cancelled', 4, 'completed', 'cancelled'],
      ],
    );
    assert.equal(v2Got[3].data.reason, 'wrong size');
    assert.equal(v2Got[4].data.reason, 'wrong size');
    assert.notEqual(v2Got[3].id, v2Got[4].id, 'each kind is an event id of its own');
    assert.notEqual(v2Receiver.hits[3].id, v2Receiver.hits[4].id, 'and a message of its own');
    // a message signed for one subscription does not verify with the other's secret
    assert.throws(() => verify(v1Secret, v2Receiver.hits[0]));
  });
});
