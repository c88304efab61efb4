import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { api, buildTestApp, createUser } from '../../helpers/app.ts';
import { waitForFinal } from '../../helpers/orders.ts';
import { createProduct } from '../../helpers/products.ts';

describe('orders placed one at a time', () => {
  it('each of 20 orders, placed when the previous one is final, is final within 10 s (a job\'s own wake-up, no poll)', async (t) => {
    // polls a minute apart: only the NOTIFY of each order's job can bring it in time
    const app = await buildTestApp(t, { jobPollingSeconds: 60 });
    const user = await createUser(app);
    const product = await createProduct(app, { stock: 15, price: '2.50' });
    const statuses: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await api(app, user, { method: 'POST', url: '/api/v1/orders', payload: { items: [{ product_id: product.id, quantity: 1 }], shipping_address: '1 Test Way' } });
      assert.equal(res.statusCode, 201, res.body);
      const order = await waitForFinal(app, res.json<{ id: number }>().id, 10_000);
      statuses.push(order.status);
    }
    // the 16th order on finds the stock gone: failed orders are final as promptly as completed ones
    assert.deepEqual(statuses, [...Array<string>(15).fill('completed'), ...Array<string>(5).fill('failed')]);
  });
});
