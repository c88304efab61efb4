import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, createUser } from '../../helpers/app.ts';
import { createProduct, stockOf } from '../../helpers/products.ts';
import { processorFor } from '../../helpers/orders.ts';
import { cancel, pendingOrder, unitsHeld } from './cancel.helpers.ts';

const ORDERS = 30;

describe('cancellation racing the processing of the same order', () => {
  it(`over ${ORDERS} orders: stock taken only by completed, uncancelled orders, and never released twice`, async (t) => {
    const app = await buildTestApp(t);
    const alice = await createUser(app);
    const admin = await createUser(app, { admin: true });
    // scarce enough that some orders fail for stock, so every outcome of processing races a cancel
    const a = await createProduct(app, { stock: 40 });
    const b = await createProduct(app, { stock: 25 });
    const initial = new Map([
      [a.id, 40],
      [b.id, 25],
    ]);
    const processor = processorFor(app, {});

    const outcomes: string[] = [];
    for (let i = 0; i < ORDERS; i++) {
      const order = await pendingOrder(app, alice, [
        { productId: a.id, quantity: 1 + (i % 3) },
        { productId: b.id, quantity: 1 + (i % 2) },
      ]);
      // two workers (a duplicate job), the owner and an administrator, all at once
      const [p1, p2, c1, c2] = await Promise.all([
        processor.process(order.id),
        processor.process(order.id),
        cancel(app, alice, order.id, { reason: `race ${i}` }),
        i % 2 === 0 ? cancel(app, admin, order.id) : Promise.resolve(undefined),
      ]);
      const answers = [c1, c2].filter((r) => r !== undefined).map((r) => r.statusCode);
      // a cancel fails only when the order failed first, or the other cancel was first
      assert.ok(answers.filter((s) => s === 200).length <= 1, `order ${order.id}: ${answers.join(',')}`);
      for (const s of answers) assert.ok(s === 200 || s === 400, `order ${order.id}: ${s}`);
      outcomes.push(`${p1}/${p2}/${answers.join(',')}`);
    }

    const orders = await app.ctx.db.selectFrom('orders').select(['id', 'status']).where('user_id', '=', alice.user.id).execute();
    assert.equal(orders.length, ORDERS);
    for (const o of orders) assert.ok(o.status === 'cancelled' || o.status === 'failed', `order ${o.id} is ${o.status}`);
    const events = await app.ctx.db
      .selectFrom('order_events')
      .select(['order_id', 'previous_status', 'status'])
      .where('user_id', '=', alice.user.id)
      .orderBy('order_id')
      .orderBy('sequence')
      .execute();
    for (const o of orders) {
      const mine = events.filter((e) => e.order_id === o.id);
      assert.ok(mine.filter((e) => e.status === 'cancelled').length <= 1, `order ${o.id} cancelled twice`);
      assert.ok(mine.filter((e) => e.status === 'completed').length <= 1, `order ${o.id} completed twice`);
      // nothing happens to an order after its cancellation
      const last = mine.at(-1)!;
      if (o.status === 'cancelled') assert.equal(last.status, 'cancelled');
    }

    // stock conserved: what is gone is exactly what completed, uncancelled orders hold (none here)
    const held = await unitsHeld(app);
    for (const [productId, start] of initial) {
      const units = held.get(productId) ?? 0;
      assert.equal(start, (await stockOf(app, productId)) + units, `product ${productId}`);
    }
    // the races went more than one way
    assert.ok(new Set(outcomes).size > 1, outcomes.join(' '));
  });
});
