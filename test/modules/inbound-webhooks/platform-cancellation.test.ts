import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { ProductRow } from '../../../src/modules/products/products.tables.ts';
import { buildTestApp, errorBody, waitFor } from '../../helpers/app.ts';
import { stockOf } from '../../helpers/products.ts';
import { eventsOf, processorFor, waitForFinal } from '../../helpers/orders.ts';
import { fixturePayload, seedProduct, sendInbound } from '../../helpers/webhooks.ts';
import { statusOf } from '../orders/cancel.helpers.ts';

const CANCEL_V1 = '/api/v1/webhooks/orders/cancelled';
const CANCEL_V2 = '/api/v2/webhooks/orders/cancelled';

let platformId = 7100000000000;

describe('platform cancellations: POST /webhooks/orders/cancelled', () => {
  let app: FastifyInstance;
  let mug: ProductRow;
  let tea: ProductRow;

  const settled = (webhookId: string) =>
    waitFor(async () => {
      const row = await app.ctx.db.selectFrom('inbound_webhooks').selectAll().where('webhook_id', '=', webhookId).executeTakeFirst();
      return row && row.status !== 'received' ? row : undefined;
    });
  const orderOf = async (externalId: string) =>
    app.ctx.db.selectFrom('orders').selectAll().where('source', '=', 'shopify').where('external_id', '=', externalId).executeTakeFirst();
  const create = async (id: number, webhookId: string) => {
    const res = await sendInbound(app, JSON.stringify({ ...fixturePayload(), id }), { webhookId });
    assert.equal(res.statusCode, 200, res.body);
    return settled(webhookId);
  };
  const cancellation = async (id: number, webhookId: string, url = CANCEL_V1, reason: string | null = 'customer') => {
    const res = await sendInbound(app, JSON.stringify({ ...fixturePayload(), id, cancel_reason: reason, cancelled_at: new Date().toISOString() }), {
      webhookId,
      url,
      topic: 'orders/cancelled',
    });
    assert.equal(res.statusCode, 200, res.body);
    return res;
  };
  const units = () => Promise.all([stockOf(app, mug.id), stockOf(app, tea.id)]);

  before(async () => {
    app = await buildTestApp(undefined, { shopifyWebhookSecret: 'test-shopify-webhook-secret' });
    mug = await seedProduct(app, 'MUG-CERAMIC-350', { stock: 100 });
    tea = await seedProduct(app, 'TEA-EARLGREY-100', { stock: 100 });
  });
  after(() => app.close());

  it('after its orders/create: the completed order is cancelled, its stock released, the webhook linked to it', async () => {
    const id = ++platformId;
    const start = await units();
    const created = await create(id, `create-${id}`);
    assert.equal(created.status, 'processed', created.error ?? '');
    const order = await waitForFinal(app, created.order_id!);
    assert.equal(order.status, 'completed');
    assert.deepEqual(await units(), [start[0] - 2, start[1] - 1]);

    await cancellation(id, `cancel-${id}`);
    const row = await settled(`cancel-${id}`);
    assert.equal(row.status, 'processed', row.error ?? '');
    assert.equal(row.topic, 'orders/cancelled');
    assert.equal(row.order_id, order.id);
    assert.equal(await statusOf(app, order.id), 'cancelled');
    assert.deepEqual(await units(), start);
    const last = (await eventsOf(app, order.id)).at(-1)!;
    assert.deepEqual([last.previous_status, last.status], ['completed', 'cancelled']);
  });

  it('before its orders/create (under v2): recorded, then applied when the order arrives, which is never reserved', async () => {
    const id = ++platformId;
    const start = await units();
    await cancellation(id, `early-cancel-${id}`, CANCEL_V2, 'fraud');
    const early = await settled(`early-cancel-${id}`);
    assert.equal(early.status, 'processed', early.error ?? '');
    assert.equal(early.order_id, null);
    assert.equal(await orderOf(String(id)), undefined);

    const created = await create(id, `late-create-${id}`);
    assert.equal(created.status, 'processed', created.error ?? '');
    const orderId = created.order_id!;
    assert.equal(await statusOf(app, orderId), 'cancelled');
    // its processing (the job, or this run beside it) finds it cancelled and reserves nothing
    assert.equal(await processorFor(app, {}).process(orderId), 'cancelled');
    assert.equal(await statusOf(app, orderId), 'cancelled');
    assert.deepEqual(await units(), start);
    assert.deepEqual(
      (await eventsOf(app, orderId)).map((e) => [e.previous_status, e.status]),
      [
        [null, 'pending'],
        ['pending', 'cancelled'],
      ],
    );
    const linked = await settled(`early-cancel-${id}`);
    assert.equal(linked.order_id, orderId);
    const reason = await app.ctx.db.selectFrom('order_events').select('reason').where('order_id', '=', orderId).where('status', '=', 'cancelled').executeTakeFirstOrThrow();
    assert.equal(reason.reason, 'fraud');
  });

  it('is stored exactly like orders/create: a repeated webhook id is a duplicate, a bad signature stores nothing', async () => {
    const id = ++platformId;
    await create(id, `create-${id}`);
    const first = await cancellation(id, `dup-cancel-${id}`);
    assert.equal(first.json<{ duplicate: boolean }>().duplicate, false);
    const again = await cancellation(id, `dup-cancel-${id}`, CANCEL_V2);
    assert.deepEqual(again.json(), { status: 'received', webhook_id: `dup-cancel-${id}`, duplicate: true });
    const rows = await app.ctx.db.selectFrom('inbound_webhooks').select('id').where('webhook_id', '=', `dup-cancel-${id}`).execute();
    assert.equal(rows.length, 1);

    const before = await app.ctx.db.selectFrom('inbound_webhooks').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    for (const url of [CANCEL_V1, CANCEL_V2]) {
      const bad = await sendInbound(app, JSON.stringify({ id, cancel_reason: 'customer' }), { url, hmac: 'AAAA', topic: 'orders/cancelled' });
      assert.equal(bad.statusCode, 401);
      assert.equal(errorBody(bad).error_code, 'INVALID_SIGNATURE');
    }
    const after = await app.ctx.db.selectFrom('inbound_webhooks').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    assert.equal(Number(after.n), Number(before.n));
  });

  it('a cancellation of an order that failed leaves it failed; a body that is no cancellation is recorded as failed', async () => {
    const id = ++platformId;
    const created = await create(id, `create-${id}`);
    const order = await waitForFinal(app, created.order_id!);
    // fail it the way a retry-exhausted processing would leave it, directly
    if (order.status !== 'failed') await app.ctx.db.updateTable('orders').set({ status: 'failed', failure_reason: 'PROCESSING_ERROR' }).where('id', '=', order.id).execute();
    const start = await units();
    await cancellation(id, `cancel-failed-${id}`);
    const row = await settled(`cancel-failed-${id}`);
    assert.equal(row.status, 'processed');
    assert.equal(await statusOf(app, order.id), 'failed');
    assert.deepEqual(await units(), start);

    await sendInbound(app, JSON.stringify({ cancel_reason: 'customer' }), { webhookId: `no-id-${id}`, url: CANCEL_V1, topic: 'orders/cancelled' });
    const bad = await settled(`no-id-${id}`);
    assert.equal(bad.status, 'failed');
    assert.match(bad.error ?? '', /invalid cancellation payload/);
  });
});
