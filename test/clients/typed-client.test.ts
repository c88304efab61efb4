import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServiceClient } from '../../clients/typescript/client.ts';
import { buildTestApp, createUser, defer, TEST_PASSWORD, waitFor } from '../helpers/app.ts';
import { startSlowReceiver, type Envelope } from '../modules/outbound-webhooks/outbound-webhooks.helpers.ts';

// The documented flow through the generated types and the openapi-fetch client, against the app on
// a real port: every call below is type-checked against clients/typescript/schema-v1.d.ts and
// schema-v2.d.ts by `npm run typecheck`, so a change of a document that breaks an integrator breaks
// this file.
describe('typed client (openapi-typescript + openapi-fetch)', { timeout: 240000 }, () => {
  it('signs in, refreshes, manages users, items, orders until completed and subscriptions', async (t) => {
    const app = await buildTestApp(t);
    const admin = await createUser(app, { admin: true });
    const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
    const receiver = await startSlowReceiver();
    defer(t, () => receiver.close());

    // sign in and refresh
    const asAdmin = createServiceClient({ baseUrl });
    const session = await asAdmin.signIn(admin.email, TEST_PASSWORD);
    assert.match(session.accessToken, /^ey/);
    assert.equal(await asAdmin.refresh(), true);
    const me = await asAdmin.api.GET('/api/v1/auth/me');
    assert.equal(me.response.status, 200);
    assert.equal(me.data?.email, admin.email);
    assert.equal(me.data?.is_admin, true);

    // a call answered 401 (an access token the service does not accept) is refreshed and repeated once
    const sessions: (string | undefined)[] = [];
    const stale = createServiceClient({
      baseUrl,
      session: { accessToken: 'not-a-token', refreshToken: session.refreshToken },
      onSession: (s) => sessions.push(s?.accessToken),
    });
    const again = await stale.api.GET('/api/v1/auth/me');
    assert.equal(again.response.status, 200);
    assert.equal(again.data?.email, admin.email);
    assert.equal(sessions.length, 1);
    assert.match(sessions[0] ?? '', /^ey/);

    // users (admin): create one, read it, list
    const email = `typed-${Date.now()}@example.com`;
    const created = await asAdmin.api.POST('/api/v1/users', { body: { email, full_name: 'Typed Client', password: TEST_PASSWORD } });
    assert.equal(created.response.status, 201);
    const userId = created.data?.id;
    assert.ok(userId);
    const read = await asAdmin.api.GET('/api/v1/users/{user_id}', { params: { path: { user_id: userId } } });
    assert.equal(read.data?.email, email);
    const users = await asAdmin.api.GET('/api/v1/users', { params: { query: { page: 1, page_size: 50 } } });
    assert.ok(users.data?.items.some((u) => u.id === userId));
    const duplicate = await asAdmin.api.POST('/api/v1/users', { body: { email, full_name: 'Again', password: TEST_PASSWORD } });
    assert.equal(duplicate.response.status, 400);
    assert.equal(typeof duplicate.error?.error_code, 'string');

    // a product to order (admin)
    const product = await asAdmin.api.POST('/api/v1/products', { body: { sku: `TYPED-${Date.now()}`, name: 'Typed widget', price: 2.5, stock: 10 } });
    assert.equal(product.response.status, 201);
    const productId = product.data?.id;
    assert.ok(productId);

    // the new user signs in with its own client
    const asUser = createServiceClient({ baseUrl });
    await asUser.signIn(email, TEST_PASSWORD);

    // items: create, read, update, list, delete
    const item = await asUser.api.POST('/api/v1/items', { body: { name: 'Notebook', price: 4.2 } });
    assert.equal(item.response.status, 201);
    const itemId = item.data?.id;
    assert.ok(itemId);
    const patched = await asUser.api.PATCH('/api/v1/items/{item_id}', { params: { path: { item_id: itemId } }, body: { price: 5 } });
    assert.equal(patched.data?.price, 5);
    const items = await asUser.api.GET('/api/v1/items', { params: { query: { skip: 0, limit: 10 } } });
    assert.deepEqual(
      items.data?.map((i) => i.id),
      [itemId],
    );
    const removed = await asUser.api.DELETE('/api/v1/items/{item_id}', { params: { path: { item_id: itemId } } });
    assert.equal(removed.response.status, 204);
    const gone = await asUser.api.GET('/api/v1/items/{item_id}', { params: { path: { item_id: itemId } } });
    assert.equal(gone.response.status, 404);
    assert.equal(gone.error?.error_code, 'NOT_FOUND');

    // subscriptions: the user subscribes a real receiver to its orders' events
    const subscription = await asUser.api.POST('/api/v1/webhooks/subscriptions', {
      body: { url: receiver.url, events: ['order.created', 'order.status_changed'], description: 'typed client test' },
    });
    assert.equal(subscription.response.status, 201);
    const subscriptionId = subscription.data?.id;
    assert.ok(subscriptionId);

    // orders: place one and follow it until completed
    const order = await asUser.api.POST('/api/v1/orders', {
      body: { items: [{ product_id: productId, quantity: 2 }], shipping_address: '1 Typed Street' },
    });
    assert.equal(order.response.status, 201);
    const orderId = order.data?.id;
    assert.ok(orderId);
    assert.equal(order.data?.status, 'pending');
    const completed = await waitFor(async () => {
      const { data } = await asUser.api.GET('/api/v1/orders/{order_id}', { params: { path: { order_id: orderId } } });
      return data?.status === 'completed' ? data : undefined;
    }, 30000);
    assert.equal(completed.total_amount, 5);
    const orders = await asUser.api.GET('/api/v1/orders', { params: { query: { page: 1, page_size: 10, status: 'completed' } } });
    assert.deepEqual(
      orders.data?.items.map((o) => o.id),
      [orderId],
    );

    // the subscription's deliveries, as the receiver saw them and as the service lists them
    const events = await waitFor(async () => {
      const seen = receiver.hits.map((h) => JSON.parse(h.body) as Envelope).filter((e) => e.data.order_id === orderId);
      return seen.some((e) => e.data.status === 'completed') ? seen : undefined;
    }, 30000);
    assert.equal(events[0].type, 'order.created');
    const deliveries = await waitFor(async () => {
      const { data } = await asUser.api.GET('/api/v1/webhooks/subscriptions/{subscription_id}/deliveries', {
        params: { path: { subscription_id: subscriptionId }, query: { page: 1, page_size: 50, order_id: orderId } },
      });
      return data && data.items.length >= events.length && data.items.every((d) => d.message_status === 'delivered') ? data : undefined;
    });
    assert.ok(deliveries.items.every((d) => d.order_id === orderId));

    const unsubscribed = await asUser.api.DELETE('/api/v1/webhooks/subscriptions/{subscription_id}', {
      params: { path: { subscription_id: subscriptionId } },
    });
    assert.equal(unsubscribed.response.status, 204);

    // sign-out revokes the refresh token: the client can no longer refresh
    await asUser.signOut();
    assert.equal(asUser.session, undefined);
    const afterSignOut = await asUser.api.GET('/api/v1/auth/me');
    assert.equal(afterSignOut.response.status, 401);
  });

  it('v2: the cancel route, with no body or a reason; rotate-secret with no body (both bodies optional)', async (t) => {
    const app = await buildTestApp(t);
    const admin = await createUser(app, { admin: true });
    const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
    const service = createServiceClient({ baseUrl, version: 'v2' });
    assert.equal(service.version, 'v2');
    await service.signIn(admin.email, TEST_PASSWORD);

    const product = await service.api.POST('/api/v2/products', { body: { sku: `TYPED-V2-${Date.now()}`, name: 'Typed widget', price: 2.5, stock: 10 } });
    const productId = product.data?.id;
    assert.ok(productId);
    const place = async () => {
      const { data } = await service.api.POST('/api/v2/orders', { body: { items: [{ product_id: productId, quantity: 1 }], shipping_address: '1 Typed Street' } });
      assert.ok(data);
      return data.id;
    };

    const first = await place();
    const bare = await service.api.POST('/api/v2/orders/{order_id}/cancel', { params: { path: { order_id: first } } });
    assert.equal(bare.response.status, 200, JSON.stringify(bare.error));
    assert.equal(bare.data?.status, 'cancelled');
    assert.equal(typeof bare.data?.cancelled_at, 'string');
    const again = await service.api.POST('/api/v2/orders/{order_id}/cancel', { params: { path: { order_id: first } } });
    assert.equal(again.response.status, 400);
    assert.equal(again.error?.error_code, 'ORDER_NOT_CANCELLABLE');

    const second = await place();
    const reasoned = await service.api.POST('/api/v2/orders/{order_id}/cancel', {
      params: { path: { order_id: second } },
      body: { reason: 'Ordered the wrong size by mistake.' },
    });
    assert.equal(reasoned.data?.status, 'cancelled');
    const events = await service.api.GET('/api/v2/orders/{order_id}/events', { params: { path: { order_id: second } } });
    assert.equal(events.data?.at(-1)?.reason, 'Ordered the wrong size by mistake.');

    // the same order read through v1's client is `failed`; v1's document has no cancel route
    const v1 = createServiceClient({ baseUrl, session: service.session });
    const asV1 = await v1.api.GET('/api/v1/orders/{order_id}', { params: { path: { order_id: second } } });
    assert.equal(asV1.data?.status, 'failed');
    // @ts-expect-error v1 has no cancel route
    const noCancel = await v1.api.POST('/api/v1/orders/{order_id}/cancel', { params: { path: { order_id: second } } });
    assert.equal(noCancel.response.status, 404);

    const subscription = await service.api.POST('/api/v2/webhooks/subscriptions', { body: { url: 'https://example.com/hooks', events: ['order.cancelled'] } });
    const subscriptionId = subscription.data?.id;
    assert.ok(subscriptionId, JSON.stringify(subscription.error));
    const rotated = await service.api.POST('/api/v2/webhooks/subscriptions/{subscription_id}/rotate-secret', {
      params: { path: { subscription_id: subscriptionId } },
    });
    assert.equal(rotated.response.status, 200, JSON.stringify(rotated.error));
    assert.match(rotated.data?.secret ?? '', /^whsec_/);
    assert.notEqual(rotated.data?.secret, subscription.data?.secret);

    // a refresh through v2's sign-in routes
    assert.equal(await service.refresh(), true);
    await service.signOut();
    assert.equal(await service.refresh(), false);
  });
});
