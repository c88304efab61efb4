import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, type TestUser } from '../../helpers/app.ts';
import { createProduct } from '../../helpers/products.ts';

interface Page {
  items: { id: number; user_id: number }[];
  total: number;
  has_next: boolean;
}

describe("admin orders filtered by the customer's e-mail: GET /admin/orders?customer_email=", () => {
  let app: FastifyInstance;
  let admin: TestUser;
  let alice: TestUser;
  let bob: TestUser;
  const placed = { alice: [] as number[], bob: [] as number[] };

  const list = async (query: string) => {
    const res = await api(app, admin, { method: 'GET', url: `/api/v2/admin/orders${query}` });
    assert.equal(res.statusCode, 200, `${query}: ${res.body}`);
    return res.json<Page>();
  };

  before(async () => {
    app = await buildTestApp(undefined);
    admin = await createUser(app, { admin: true, login: false });
    alice = await createUser(app, { email: 'Alice.Customer@example.com', login: false });
    bob = await createUser(app, { email: 'bob.customer@example.com', login: false });
    const product = await createProduct(app, { stock: 100 });
    for (const [who, ids] of [[alice, placed.alice], [bob, placed.bob], [alice, placed.alice]] as const) {
      const res = await api(app, who, {
        method: 'POST',
        url: '/api/v1/orders',
        payload: { items: [{ product_id: product.id, quantity: 1 }], shipping_address: '1 Main St' },
      });
      assert.equal(res.statusCode, 201, res.body);
      ids.push(res.json<{ id: number }>().id);
    }
  });
  after(() => app.close());

  it("selects that user's orders, whatever the case of the e-mail, newest first", async () => {
    const page = await list('?customer_email=alice.customer%40EXAMPLE.com');
    assert.deepEqual(page.items.map((o) => o.id), [...placed.alice].reverse());
    assert.equal(page.total, 2);
    assert.deepEqual((await list('?customer_email=bob.customer%40example.com')).items.map((o) => o.id), placed.bob);
  });

  it('an e-mail no user has, a part of one, or a user_id of another user: no order', async () => {
    for (const query of ['?customer_email=nobody%40example.com', '?customer_email=alice', `?customer_email=bob.customer%40example.com&user_id=${alice.user.id}`]) {
      const page = await list(query);
      assert.deepEqual([page.items, page.total, page.has_next], [[], 0, false], query);
    }
    const same = await list(`?customer_email=bob.customer%40example.com&user_id=${bob.user.id}`);
    assert.deepEqual(same.items.map((o) => o.id), placed.bob);
  });
});
