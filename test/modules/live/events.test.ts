import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { ProductRow } from '../../../src/modules/products/products.tables.ts';
import { api, buildTestApp, createUser, errorBody, type TestUser } from '../../helpers/app.ts';
import { createProduct } from '../../helpers/products.ts';
import { openEvents, orderEvents, type SseStream } from '../../helpers/sse.ts';
import { insertOrder } from '../../../src/modules/orders/orders.changes.repository.ts';
import { cancel, pendingOrder } from '../orders/cancel.helpers.ts';

describe('GET /api/v2/events', () => {
  let app: FastifyInstance;
  let base: string;
  let alice: TestUser;
  let bob: TestUser;
  let admin: TestUser;
  let product: ProductRow;
  const streams: SseStream[] = [];
  const open = async (who: TestUser | undefined, lastEventId?: string) => {
    const s = await openEvents(base, who?.token, lastEventId);
    streams.push(s);
    return s;
  };
  const place = async (who: TestUser) => {
    const res = await api(app, who, { method: 'POST', url: '/api/v2/orders', payload: { items: [{ product_id: product.id, quantity: 1 }], shipping_address: '1 Main St' } });
    assert.equal(res.statusCode, 201, res.body);
    return res.json<{ id: number }>().id;
  };
  /** waits for the order's events up to its final status (the worker processes it) */
  const untilFinal = (s: SseStream, orderId: number) =>
    s.until((frames) => {
      const events = orderEvents(frames, orderId);
      return events.some((e) => e.event !== 'order.created' && ['completed', 'failed'].includes(e.order.status)) && events.length >= 3 ? events : undefined;
    });

  before(async () => {
    app = await buildTestApp(undefined, {}, { live: { heartbeatMs: 300, streamsPerUser: 3 } });
    await app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    alice = await createUser(app);
    bob = await createUser(app);
    admin = await createUser(app, { admin: true });
    product = await createProduct(app, { stock: 1000 });
  });
  after(async () => {
    for (const s of streams) s.close();
    await app.close();
  });

  it('streams the caller\'s own orders as the worker processes them: names, ids ascending, the v2 order as data; an admin sees them too, another user does not', async () => {
    const mine = await open(alice);
    const staff = await open(admin);
    const other = await open(bob);
    assert.equal(mine.status, 200);
    assert.match(mine.headers['content-type'] ?? '', /^text\/event-stream/);
    assert.equal(mine.headers['cache-control'], 'no-store');

    const orderId = await place(alice);
    const events = await untilFinal(mine, orderId);
    assert.deepEqual(events.map((e) => e.event), ['order.created', 'order.status_changed', 'order.status_changed']);
    const ids = orderEvents(mine.frames).map((e) => e.id);
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b), 'ids ascend');
    assert.equal(new Set(ids).size, ids.length, 'no event twice');
    // data is the order as GET /api/v2/orders/{id} reads it
    const read = await api(app, alice, { method: 'GET', url: `/api/v2/orders/${orderId}` });
    assert.deepEqual(events.at(-1)?.order, read.json());
    assert.equal(events.at(-1)?.order.status, 'completed');

    const seenByStaff = await untilFinal(staff, orderId);
    assert.deepEqual(seenByStaff.map((e) => e.id), events.map((e) => e.id));

    // bob's own order comes through; alice's events never did
    const bobsOrder = await place(bob);
    await untilFinal(other, bobsOrder);
    assert.deepEqual(new Set(orderEvents(other.frames).map((e) => e.order.user_id)), new Set([bob.user.id]));
  });

  it('a cancellation is order.cancelled', async () => {
    const mine = await open(alice);
    await mine.until((f) => (f.length > 0 ? true : undefined));
    const order = await pendingOrder(app, alice, [{ productId: product.id, quantity: 1 }]);
    const res = await cancel(app, alice, order.id, { reason: 'changed my mind' });
    assert.equal(res.statusCode, 200, res.body);
    const cancelled = await mine.until((frames) => orderEvents(frames, order.id).find((e) => e.event === 'order.cancelled'));
    assert.equal(cancelled.order.status, 'cancelled');
    assert.equal(cancelled.order.failure_reason, null);
    mine.close();
  });

  it('Last-Event-ID sends the events after it first, oldest first, only those the caller may see', async () => {
    const watcher = await open(admin);
    const orderId = await place(alice);
    const events = await untilFinal(watcher, orderId);
    const first = String(events[0].id);

    const resumed = await open(alice, first);
    const replayed = await resumed.until((frames) => {
      const mine = orderEvents(frames, orderId);
      return mine.length >= 2 ? mine : undefined;
    });
    assert.deepEqual(replayed.map((e) => e.id), events.slice(1).map((e) => e.id));
    const all = orderEvents(resumed.frames).map((e) => e.id);
    assert.deepEqual(all, [...all].sort((a, b) => a - b));
    assert.ok(all.every((id) => id > Number(first)));

    // bob resuming from the same id gets none of alice's events (his replay ends with the stream's first comment)
    const bobs = await open(bob, first);
    await bobs.until((f) => (f.some((x) => x.comment === 'heartbeat') ? true : undefined));
    assert.deepEqual(orderEvents(bobs.frames).filter((e) => e.order.user_id !== bob.user.id), []);
    for (const s of [resumed, bobs, watcher]) s.close();
  });

  it('sends a heartbeat comment while nothing happens', async () => {
    const quiet = await open(bob);
    await quiet.until((f) => (f.filter((x) => x.comment === 'heartbeat').length >= 2 ? true : undefined));
    quiet.close();
  });

  it('401 without a token or with a bad one; 403 for a deactivated user; 422 for a Last-Event-ID that is not an event id', async () => {
    for (const headers of [{}, { authorization: 'Bearer nope' }]) {
      const res = await app.inject({ method: 'GET', url: '/api/v2/events', headers });
      assert.equal(res.statusCode, 401);
      assert.ok(['NOT_AUTHENTICATED', 'INVALID_TOKEN'].includes(errorBody(res).error_code));
    }
    // a token in the URL is not a way in
    assert.equal((await app.inject({ method: 'GET', url: `/api/v2/events?access_token=${alice.token}` })).statusCode, 401);
    const inactive = await createUser(app, { active: false });
    const res = await api(app, inactive, { method: 'GET', url: '/api/v2/events' });
    assert.equal(res.statusCode, 403);
    assert.equal(errorBody(res).error_code, 'INACTIVE_USER');
    const bad = await api(app, alice, { method: 'GET', url: '/api/v2/events', headers: { 'last-event-id': 'abc' } });
    assert.equal(bad.statusCode, 422);
    assert.equal(errorBody(bad).error_code, 'VALIDATION_ERROR');
    // v1 has no stream
    assert.equal((await api(app, alice, { method: 'GET', url: '/api/v1/events' })).statusCode, 404);
  });

  it('ends the stream of a user deactivated meanwhile', async () => {
    const carol = await createUser(app);
    const s = await open(carol);
    await s.until((f) => (f.length > 0 ? true : undefined));
    const res = await api(app, admin, { method: 'PATCH', url: `/api/v2/users/${carol.user.id}`, payload: { is_active: false } });
    assert.ok(res.statusCode < 300, res.body);
    await waitUntilEnded(s);
  });

  it('a user may hold a few streams at once: one more is 429 RATE_LIMITED, and closing one makes room', async () => {
    const dave = await createUser(app);
    const held = [await open(dave), await open(dave), await open(dave)];
    const refused = await open(dave);
    assert.equal(refused.status, 429);
    assert.ok(refused.headers['retry-after']);
    held[0].close();
    const again = await waitForStatus(async () => (await open(dave)).status, 200);
    assert.equal(again, 200);
    for (const s of held) s.close();
  });
});

describe('GET /api/v2/events: resuming further back than one replay', () => {
  const replayLimit = 3;
  let app: FastifyInstance;
  let base: string;
  let product: ProductRow;
  before(async () => {
    app = await buildTestApp(undefined, {}, { live: { replayLimit } });
    await app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    product = await createProduct(app, { stock: 1000 });
  });
  after(() => app.close());

  /** the ids of the order events after `after` that `userId`'s stream carries (all, for an administrator), oldest first */
  const eventIdsAfter = async (after: number, userId?: number) => {
    let q = app.ctx.db.selectFrom('order_events').select('id').where('id', '>', after);
    if (userId !== undefined) q = q.where('user_id', '=', userId);
    return (await q.orderBy('id').execute()).map((r) => r.id);
  };
  /** the order.created event's id of a new pending order of `who` */
  const created = async (who: TestUser) => {
    const order = await pendingOrder(app, who, [{ productId: product.id, quantity: 1 }]);
    return (await app.ctx.db.selectFrom('order_events').select('id').where('order_id', '=', order.id).executeTakeFirstOrThrow()).id;
  };
  /**
   * Resumes from `from` as a client does: each stream that ends is opened again with the last id received, until `want`
   * events have come. Returns the ids received, each stream's count and whether it ended, and the last stream (open).
   */
  const resume = async (who: TestUser, from: number, want: number) => {
    const ids: number[] = [];
    const streams: { count: number; ended: boolean }[] = [];
    let last = String(from);
    for (;;) {
      const s = await openEvents(base, who.token, last);
      assert.equal(s.status, 200, s.body());
      await s.until(() => (s.ended() || ids.length + orderEvents(s.frames).length >= want ? true : undefined));
      const got = orderEvents(s.frames).map((e) => e.id);
      ids.push(...got);
      streams.push({ count: got.length, ended: s.ended() });
      if (got.length > 0) last = String(got.at(-1));
      if (!s.ended()) return { ids, streams, live: s };
      s.close();
      assert.ok(streams.length <= want, 'each stream that ends moves on');
    }
  };

  it('receives every event after Last-Event-ID, in order, none twice, over as many streams as it takes; the last one follows the live events', async () => {
    const alice = await createUser(app);
    const bob = await createUser(app);
    const from = await created(alice);
    // 3 full replays and a part of one: alice's 10 events, bob's between them (not hers to see)
    for (let i = 0; i < 10; i++) {
      await created(alice);
      await created(bob);
    }
    const expected = await eventIdsAfter(from, alice.user.id);
    assert.equal(expected.length, 10);

    const { ids, streams, live } = await resume(alice, from, expected.length);
    try {
      assert.deepEqual(ids, expected, 'every event, oldest first, no gap and no duplicate');
      // a full replay ends its stream; the one that is not full goes on with the live events
      assert.deepEqual(streams, [
        { count: 3, ended: true },
        { count: 3, ended: true },
        { count: 3, ended: true },
        { count: 1, ended: false },
      ]);
      const next = await created(alice);
      const after = await live.until((frames) => {
        const got = orderEvents(frames).map((e) => e.id);
        return got.includes(next) ? got : undefined;
      });
      assert.deepEqual(after, [expected.at(-1), next]);
    } finally {
      live.close();
    }
  });

  it('resumes from an event older than 5 minutes (an administrator: every user\'s events)', async () => {
    const admin = await createUser(app, { admin: true });
    const carol = await createUser(app);
    const from = await created(carol);
    for (let i = 0; i < 4; i++) await created(i % 2 === 0 ? carol : admin);
    // every event so far is 10 minutes old
    await app.ctx.db.updateTable('order_events').set({ created_at: new Date(Date.now() - 10 * 60_000) }).execute();
    const expected = await eventIdsAfter(from);
    assert.ok(expected.length >= 4);

    const { ids, live } = await resume(admin, from, expected.length);
    live.close();
    assert.deepEqual(ids, expected);
  });
});

describe('GET /api/v2/events and transactions that commit out of id order (PostgreSQL)', { skip: !process.env.TEST_DATABASE_URL && 'needs TEST_DATABASE_URL (PGlite runs one transaction at a time)' }, () => {
  it('an event whose transaction commits after a later id\'s still reaches the stream', async (t) => {
    const app = await buildTestApp(t);
    await app.listen({ port: 0, host: '127.0.0.1' });
    const admin = await createUser(app, { admin: true });
    const owner = await createUser(app);
    const product = await createProduct(app, { stock: 10 });
    const s = await openEvents(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, admin.token);
    t.after(() => s.close());
    await s.until((f) => (f.length > 0 ? true : undefined));

    // the first order's transaction takes its event id and stays open while a second order commits
    let commitFirst!: () => void;
    const held = new Promise<void>((resolve) => (commitFirst = resolve));
    let tookId!: () => void;
    const taken = new Promise<void>((resolve) => (tookId = resolve));
    const first = app.ctx.db.transaction().execute(async (trx) => {
      const { order } = await insertOrder(trx, { userId: owner.user.id, shippingAddress: '1 Slow St', lines: [{ productId: product.id, quantity: 1 }] });
      tookId();
      await held;
      return order!;
    });
    await taken;
    const second = await pendingOrder(app, owner, [{ productId: product.id, quantity: 1 }]);
    const later = await s.until((frames) => orderEvents(frames, second.id)[0]);
    commitFirst();
    const firstOrder = await first;
    assert.ok(firstOrder.id < second.id);
    const late = await s.until((frames) => orderEvents(frames, firstOrder.id)[0]);
    assert.equal(late.event, 'order.created');
    assert.ok(late.id < later.id, 'the lower id, sent after the higher one: it was read again');
  });
});

describe('GET /api/v2/events: the first stream of a process', () => {
  it('carries a change committed as soon as the answer\'s head has come (a client reads its data again then, and misses nothing)', async (t) => {
    const app = await buildTestApp(t);
    await app.listen({ port: 0, host: '127.0.0.1' });
    const user = await createUser(app);
    const product = await createProduct(app, { stock: 10 });
    const s = await openEvents(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, user.token);
    assert.equal(s.status, 200);
    const order = await pendingOrder(app, user, [{ productId: product.id, quantity: 1 }]);
    const created = await s.until((frames) => orderEvents(frames, order.id).find((e) => e.event === 'order.created'));
    assert.equal(created.order.status, 'pending');
    s.close();
  });
});

describe('GET /api/v2/events at shutdown', () => {
  it('an open stream ends when the app closes, and does not hold the close up', async (t) => {
    const app = await buildTestApp(t);
    await app.listen({ port: 0, host: '127.0.0.1' });
    const user = await createUser(app);
    const s = await openEvents(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, user.token);
    await s.until((f) => (f.length > 0 ? true : undefined));
    await app.close();
    await waitUntilEnded(s);
  });
});

async function waitUntilEnded(s: SseStream): Promise<void> {
  await s.until(() => (s.ended() ? true : undefined));
}

/** Opens until the status is `want` (a closed stream's slot is given back when the server sees the close). */
async function waitForStatus(tryOnce: () => Promise<number>, want: number): Promise<number> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const status = await tryOnce();
    if (status === want || Date.now() > deadline) return status;
    await new Promise((r) => setTimeout(r, 50));
  }
}
