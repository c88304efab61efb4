import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, type TestUser } from '../helpers/app.ts';
import { createProduct } from '../helpers/products.ts';
import { waitForFinal } from '../helpers/orders.ts';
import { OrderEventBus } from '../../src/events/order-events.ts';
import pg from 'pg';

const onServer = Boolean(process.env.TEST_DATABASE_URL);

/**
 * The order event bus's lookups: a listener's read runs inside the statement that writes the event,
 * and its rows reach that listener (and no other) with the event.
 */
describe('order event bus lookups', () => {
  let app: FastifyInstance;
  let alice: TestUser;
  const seen: { orderId: number; status: string; looked: readonly unknown[] | undefined; plain: boolean }[] = [];
  before(async () => {
    app = await buildTestApp(undefined);
    alice = await createUser(app);
    // reads the owner's e-mail and the status the event moves to: both come from the preview
    app.ctx.orderEvents.subscribe(
      async (_trx, event, _order, looked) => {
        seen.push({ orderId: event.order_id, status: event.status, looked, plain: false });
      },
      (db, preview) =>
        db
          .selectFrom('users')
          .select((eb) => ['email', eb.val(preview.status).as('next'), eb.val(preview.type).as('type')])
          .where('id', '=', preview.userId),
    );
    // a listener without a lookup gets nothing
    app.ctx.orderEvents.subscribe(async (_trx, event, _order, looked) => {
      seen.push({ orderId: event.order_id, status: event.status, looked, plain: true });
    });
  });
  after(() => app.close());

  it("hands each listener its own lookup's rows, read for the event's owner, type and new status", async () => {
    const product = await createProduct(app, { stock: 5, price: '2.50' });
    const res = await api(app, alice, { method: 'POST', url: '/api/v1/orders', payload: { items: [{ product_id: product.id, quantity: 1 }], shipping_address: '1 Bus Lane' } });
    assert.equal(res.statusCode, 201, res.body);
    const orderId = res.json<{ id: number }>().id;
    assert.equal((await waitForFinal(app, orderId)).status, 'completed');

    const withLookup = seen.filter((s) => s.orderId === orderId && !s.plain);
    assert.deepEqual(
      withLookup.map((s) => [s.status, s.looked]),
      [
        ['pending', [{ email: alice.email, next: 'pending', type: 'order.created' }]],
        ['processing', [{ email: alice.email, next: 'processing', type: 'order.status_changed' }]],
        ['completed', [{ email: alice.email, next: 'completed', type: 'order.status_changed' }]],
      ],
    );
    const plain = seen.filter((s) => s.orderId === orderId && s.plain);
    assert.deepEqual(
      plain.map((s) => [s.status, s.looked]),
      [
        ['pending', undefined],
        ['processing', undefined],
        ['completed', undefined],
      ],
    );
  });

  it('a lookup that finds nothing hands over an empty list', async () => {
    const empty: (readonly unknown[] | undefined)[] = [];
    app.ctx.orderEvents.subscribe(
      async (_trx, _event, _order, looked) => {
        empty.push(looked);
      },
      (db) => db.selectFrom('users').select('id').where('id', '=', -1),
    );
    const product = await createProduct(app, { stock: 5, price: '1.00' });
    const res = await api(app, alice, { method: 'POST', url: '/api/v1/orders', payload: { items: [{ product_id: product.id, quantity: 1 }], shipping_address: '2 Bus Lane' } });
    assert.equal(res.statusCode, 201, res.body);
    await waitForFinal(app, res.json<{ id: number }>().id);
    assert.deepEqual(empty, [[], [], []]);
  });
});

/**
 * Changes no listener acts on: a new order and its move to `processing` commit alone when every
 * listener's scope says it will not act (`quietWhen`); otherwise they run in a transaction and
 * every listener receives the event, with its lookup's rows.
 */
describe('order event bus: changes no listener acts on', () => {
  let app: FastifyInstance;
  let alice: TestUser;
  let bob: TestUser;
  const seen: { listener: string; orderId: number; status: string; looked: readonly unknown[] | undefined }[] = [];
  before(async () => {
    app = await buildTestApp(undefined);
    alice = await createUser(app);
    bob = await createUser(app);
    // acts only when its lookup finds a row: only for bob
    app.ctx.orderEvents.subscribe(
      async (_trx, event, _order, looked) => {
        seen.push({ listener: 'rows', orderId: event.order_id, status: event.status, looked });
      },
      (db, preview) => db.selectFrom('users').select('email').where('id', '=', preview.userId).where('email', '=', bob.email),
      { onlyWithRows: true },
    );
    // acts only on final statuses (and records every event it is handed)
    app.ctx.orderEvents.subscribe(
      async (_trx, event) => {
        seen.push({ listener: 'final', orderId: event.order_id, status: event.status, looked: undefined });
      },
      undefined,
      { actsOn: (preview) => preview.status === 'completed' || preview.status === 'failed' },
    );
  });
  after(() => app.close());

  const place = async (user: TestUser) => {
    const product = await createProduct(app, { stock: 5, price: '1.50' });
    const res = await api(app, user, { method: 'POST', url: '/api/v1/orders', payload: { items: [{ product_id: product.id, quantity: 1 }], shipping_address: '3 Bus Lane' } });
    assert.equal(res.statusCode, 201, res.body);
    const orderId = res.json<{ id: number }>().id;
    assert.equal((await waitForFinal(app, orderId)).status, 'completed');
    return seen.filter((s) => s.orderId === orderId).map((s) => [s.listener, s.status, s.looked]);
  };

  it('publishes nothing for the creation and the move to processing when no listener acts on them', async () => {
    // the completion publishes in its transaction, as every other change does
    assert.deepEqual(await place(alice), [
      ['rows', 'completed', []],
      ['final', 'completed', undefined],
    ]);
    const events = await api(app, alice, { method: 'GET', url: `/api/v1/orders/${(await lastOrder(app, alice)).id}/events` });
    assert.deepEqual(
      events.json<{ status: string }[]>().map((e) => e.status),
      ['pending', 'processing', 'completed'],
      'the events are written all the same',
    );
  });

  it('publishes every change, in its transaction, when a listener acts on it', async () => {
    // a change published in a transaction reaches every listener, which decides for itself
    assert.deepEqual(await place(bob), [
      ['rows', 'pending', [{ email: bob.email }]],
      ['final', 'pending', undefined],
      ['rows', 'processing', [{ email: bob.email }]],
      ['final', 'processing', undefined],
      ['rows', 'completed', [{ email: bob.email }]],
      ['final', 'completed', undefined],
    ]);
  });

  it('quietWhen: true without listeners that act, undefined when a listener\'s scope cannot tell (tellsQuiet says which)', () => {
    const preview = { type: 'order.created', status: 'pending', userId: alice.user.id } as const;
    const bus = new OrderEventBus();
    assert.ok(bus.quietWhen(app.ctx.db, preview));
    assert.equal(bus.tellsQuiet(preview), true);
    bus.subscribe(async () => {}, undefined, { actsOn: () => false });
    assert.ok(bus.quietWhen(app.ctx.db, preview));
    assert.equal(bus.tellsQuiet(preview), true);
    bus.subscribe(async () => {});
    assert.equal(bus.quietWhen(app.ctx.db, preview), undefined);
    assert.equal(bus.tellsQuiet(preview), false);
  });
});

describe("order processing: the outcome's statement commits its transaction when no listener acts on it", () => {
  let app: FastifyInstance;
  let alice: TestUser;
  let carol: TestUser;
  const seen: { orderId: number; status: string; looked: readonly unknown[] | undefined }[] = [];
  before(async () => {
    app = await buildTestApp(undefined);
    alice = await createUser(app);
    carol = await createUser(app);
    // acts on carol's completions only: her move to processing is quiet, her completion is not
    app.ctx.orderEvents.subscribe(
      async (_trx, event, _order, looked) => {
        seen.push({ orderId: event.order_id, status: event.status, looked });
      },
      (db, preview) =>
        db
          .selectFrom('users')
          .select('email')
          .where('id', '=', preview.userId)
          .where('email', '=', preview.status === 'completed' ? carol.email : ''),
      { onlyWithRows: true },
    );
  });
  after(() => app.close());

  /** Places an order of 2 units of a product with stock 5 and waits for it; the statements sent meanwhile. */
  const place = async (user: TestUser) => {
    const product = await createProduct(app, { stock: 5, price: '1.50' });
    const sent: string[] = [];
    const original = pg.Client.prototype.query;
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      const first = args[0] as string | { text?: string } | null;
      sent.push(typeof first === 'string' ? first : String(first?.text ?? ''));
      return (original as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof original;
    try {
      const res = await api(app, user, { method: 'POST', url: '/api/v1/orders', payload: { items: [{ product_id: product.id, quantity: 2 }], shipping_address: '3 Bus Lane' } });
      assert.equal(res.statusCode, 201, res.body);
      const orderId = res.json<{ id: number }>().id;
      const order = await waitForFinal(app, orderId);
      assert.equal(order.status, 'completed');
      assert.equal(Number(order.total_amount), 3);
      const stock = await app.ctx.db.selectFrom('products').select('stock').where('id', '=', product.id).executeTakeFirstOrThrow();
      const events = await app.ctx.db.selectFrom('order_events').select(['status', 'sequence']).where('order_id', '=', orderId).orderBy('sequence').execute();
      return { orderId, stock: stock.stock, events: events.map((e) => `${e.sequence}:${e.status}`), sent };
    } finally {
      pg.Client.prototype.query = original;
    }
  };

  it('no listener acts: the order completes, and on PostgreSQL its transaction sends no COMMIT of its own', async () => {
    const placed = await place(alice);
    assert.equal(placed.stock, 3);
    assert.deepEqual(placed.events, ['1:pending', '2:processing', '3:completed']);
    assert.deepEqual(seen.filter((s) => s.orderId === placed.orderId), []);
    if (onServer) assert.deepEqual(placed.sent.filter((text) => /^\s*commit\s*$/i.test(text)), []);
  });

  it('a listener acts on the outcome: the committing statement writes nothing, and the outcome is written and published once, in a transaction', async () => {
    const placed = await place(carol);
    // reserved once: the statement that found the listener took no stock and priced no line
    assert.equal(placed.stock, 3);
    assert.deepEqual(placed.events, ['1:pending', '2:processing', '3:completed']);
    assert.deepEqual(seen.filter((s) => s.orderId === placed.orderId), [{ orderId: placed.orderId, status: 'completed', looked: [{ email: carol.email }] }]);
    const lines = await app.ctx.db.selectFrom('order_items').select(['unit_price', 'quantity']).where('order_id', '=', placed.orderId).execute();
    assert.deepEqual(lines.map((l) => [Number(l.unit_price), l.quantity]), [[1.5, 2]]);
  });
});

async function lastOrder(app: FastifyInstance, user: TestUser): Promise<{ id: number }> {
  const res = await api(app, user, { method: 'GET', url: '/api/v1/orders?page_size=1' });
  return res.json<{ items: { id: number }[] }>().items[0];
}
