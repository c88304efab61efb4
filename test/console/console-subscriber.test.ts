import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { api, buildTestApp, createUser, defer, waitFor, type TestUser } from '../helpers/app.ts';
import { waitForFinal } from '../helpers/orders.ts';
import { createProduct } from '../helpers/products.ts';
import { startReceiver, type ReceivedRequest, type Receiver } from '../helpers/webhooks.ts';
import {
  assertAccessible,
  assertNoTrouble,
  builtConsole,
  consoleAccessToken,
  launchBrowser,
  navigationLinks,
  newConsolePage,
  openFromNavigation,
  screenshotDir,
  assertAccessibleAtBothWidths,
  signIn,
  skipWithoutChromium,
  type PageTrouble,
} from './console.helpers.ts';

/** The envelope's type, after checking the delivery's signature with the standardwebhooks package. */
function verifiedType(secret: string, req: ReceivedRequest): string {
  const headers = Object.fromEntries(['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((h) => [h, String(req.headers[h])]));
  return (new Webhook(secret).verify(req.body, headers) as { type: string }).type;
}

describe('the console for a subscriber (not staff), in Chromium', { skip: skipWithoutChromium, timeout: 300000 }, () => {
  let app: FastifyInstance;
  let base: string;
  let browser: Browser;
  let page: Page;
  let trouble: PageTrouble;
  let sam: TestUser;
  let receiver: Receiver;
  let productId: number;
  let subscriptionId = 0;
  let secret = '';

  const placeOrder = async () => {
    const res = await api(app, sam, { method: 'POST', url: '/api/v2/orders', payload: { items: [{ product_id: productId, quantity: 1 }], shipping_address: '3 Quay Road' } });
    assert.equal(res.statusCode, 201, res.body);
    const id = res.json<{ id: number }>().id;
    assert.equal((await waitForFinal(app, id)).status, 'completed');
    return id;
  };
  const messageStates = () =>
    app.ctx.db.selectFrom('webhook_messages').select(['message_id', 'status', 'order_id']).where('subscription_id', '=', subscriptionId).execute();
  /**
   * Until the order's two status changes (to processing, to completed) have their messages and every
   * message of the subscription has settled (one attempt each: the schedule has no retry).
   */
  const settled = (orderId?: number) =>
    waitFor(async () => {
      const states = await messageStates();
      const ofOrder = states.filter((m) => m.order_id === orderId).length;
      return (orderId === undefined || ofOrder === 2) && states.every((m) => m.status === 'failed' || m.status === 'delivered') ? true : undefined;
    });

  before(async () => {
    // one attempt per message: a receiver that fails makes a failed message at once
    app = await buildTestApp(undefined, { webhookRetrySchedule: [] }, { consoleDir: await builtConsole() });
    defer(undefined, () => app.close());
    sam = await createUser(app, { email: 'sam.subscriber@example.com', login: false });
    productId = (await createProduct(app, { name: 'Harbour print', stock: 100 })).id;
    receiver = await startReceiver('/console-hook');
    defer(undefined, () => receiver.close());
    base = await app.listen({ port: 0, host: '127.0.0.1' });
    browser = await launchBrowser();
    ({ page, trouble } = await newConsolePage(browser, base));
    await signIn(page, base, sam.email, sam.password);
  });

  it('sees no staff navigation, is refused each staff page, and the API refuses the console\'s token there too', async () => {
    assert.deepEqual(await navigationLinks(page), ['Webhooks', 'My orders']);
    for (const path of ['orders', 'inbound-webhooks', 'users', 'products']) {
      await page.goto(`${base}/console/${path}`);
      await page.getByRole('heading', { level: 1, name: 'Staff only' }).waitFor();
      await page.getByRole('alert').filter({ hasText: 'Only staff (administrators) may see this page.' }).waitFor();
      assert.equal(await page.getByRole('table').count(), 0, path);
    }
    await assertAccessible(page, 'a staff page refused');
    await page.goto(`${base}/console/no-such-page`);
    await page.getByRole('heading', { level: 1, name: 'Page not found' }).waitFor();
    await assertAccessible(page, 'an unknown console address');
    const token = await consoleAccessToken(page);
    for (const [method, url] of [['GET', '/api/v2/admin/orders'], ['GET', '/api/v2/admin/inbound-webhooks'], ['GET', '/api/v2/admin/users'], ['PATCH', `/api/v2/products/${productId}`]] as const) {
      const res = await app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(method === 'PATCH' ? { payload: { stock: 1 } } : {}) });
      assert.equal(res.statusCode, 403, `${method} ${url}`);
      assert.equal(res.json<{ error_code: string }>().error_code, 'ADMIN_REQUIRED');
    }
  });

  it('creates a subscription: a toast says so, and its secret is shown once', async () => {
    await openFromNavigation(page, 'Webhooks');
    await assertAccessibleAtBothWidths(page, 'the webhooks page');
    await page.getByLabel('URL').fill(receiver.url);
    await page.getByRole('button', { name: 'Create subscription' }).click();
    const shown = page.getByRole('region', { name: 'Signing secret' });
    await shown.waitFor();
    secret = await shown.getByLabel('Secret', { exact: true }).inputValue();
    assert.match(secret, /^whsec_/);
    await page.getByRole('status').filter({ hasText: /^Subscription \d+ is created\. Copy its signing secret now: it is not shown again\.$/ }).waitFor();
    await assertAccessible(page, 'a new secret');
    await shown.getByRole('button', { name: 'I have copied it' }).click();
    await shown.waitFor({ state: 'detached' });
    const link = page.getByRole('table', { name: 'Subscriptions' }).getByRole('link', { name: /^Subscription \d+$/ });
    subscriptionId = Number((await link.innerText()).split(' ')[1]);
    await link.click();
    await page.getByRole('heading', { level: 1, name: `Subscription ${subscriptionId}` }).waitFor();
    assert.equal(await page.getByLabel('Secret', { exact: true }).count(), 0, 'the secret is not shown again');
  });

  it("a failed delivery: filtered by event type and state, the failed message shows its attempts under it; Resend delivers it, signed with the secret", async () => {
    receiver.respond = () => ({ status: 500, body: 'receiver down for maintenance' });
    await settled(await placeOrder());
    await page.reload();
    const log = page.getByRole('region', { name: 'Messages' });
    await log.getByRole('article').first().waitFor();
    const filters = log.getByRole('search', { name: 'Filter messages' });
    await filters.getByLabel('Event type').selectOption('order.status_changed');
    await filters.getByLabel('Message state').selectOption('failed');
    await filters.getByRole('button', { name: 'Apply filters' }).click();
    await log.getByText('Page 1 of 1 · 2 messages').waitFor();
    const failed = log.getByRole('article').first();
    assert.match(await failed.getByRole('heading', { level: 3 }).innerText(), /^order\.status_changed \(order \d+\) failed$/);
    await failed.getByText(/· 1 attempt$/).waitFor();
    const attempts = failed.getByRole('list', { name: /^Attempts of msg_/ });
    // the receiver's answer once, not "HTTP 500: HTTP 500: …"
    assert.deepEqual(await attempts.getByRole('listitem').getByRole('strong').allInnerTexts(), ['Attempt 1: HTTP 500: receiver down for maintenance']);
    await assertAccessibleAtBothWidths(page, 'a subscription with its messages filtered', 'console-messages-filtered-390.png');

    const link = failed.getByRole('link', { name: /^msg_/ });
    const messageId = await link.innerText();
    await link.click();
    await page.getByRole('heading', { level: 1, name: `Message ${messageId}` }).waitFor();
    await page.getByRole('table', { name: 'Attempts' }).getByText('receiver down for maintenance', { exact: true }).waitFor();
    await page.getByRole('table', { name: 'Attempts' }).getByRole('cell', { name: 'HTTP 500: receiver down for maintenance', exact: true }).waitFor();
    await assertAccessibleAtBothWidths(page, 'a failed message');

    receiver.respond = () => ({ status: 204 });
    const before = receiver.requests.length;
    await page.getByRole('button', { name: 'Resend' }).click();
    await page.locator('dl.facts').getByText('delivered', { exact: true }).waitFor();
    const resent = receiver.requests.slice(before);
    assert.equal(resent.length, 1);
    assert.equal(resent[0].headers['webhook-id'], messageId, 'the same message, sent again');
    assert.equal(verifiedType(secret, resent[0]), 'order.status_changed');
    await page.getByRole('table', { name: 'Attempts' }).getByRole('cell', { name: 'HTTP 204' }).waitFor();
  });

  it('a new message appears in the list without a reload, and the Delivery success chart counts it', async () => {
    await page.goto(`${base}/console/webhooks/${subscriptionId}`);
    const log = page.getByRole('region', { name: 'Messages' });
    await log.getByRole('article').first().waitFor();
    const orderId = await placeOrder();
    // live: the order's events stream to the page, which reads its messages again (liveness bound, not a timing check)
    await log.getByRole('heading', { level: 3, name: new RegExp(`^order\\.status_changed \\(order ${orderId}\\)`) }).first().waitFor({ timeout: 10_000 });

    const chart = page.getByRole('figure', { name: 'Delivery success' });
    await chart.getByRole('img', { name: 'Delivery success' }).waitFor();
    // every attempt made: the chart then shows the counts the API gives
    await settled(orderId);
    const stats = await api(app, sam, { method: 'GET', url: `/api/v2/webhooks/subscriptions/${subscriptionId}/stats` });
    const { succeeded, failed } = stats.json<{ succeeded: number; failed: number }>();
    await chart.getByText(`${((100 * succeeded) / (succeeded + failed)).toFixed(1)}% of ${succeeded + failed} delivery attempts to this subscription in the last 24 hours succeeded.`).waitFor();
    await chart.getByRole('button', { name: 'The numbers of “Delivery success”' }).click();
    const numbers = chart.getByRole('table', { name: 'Delivery success' });
    const cells = async (col: number) => (await numbers.locator(`tbody tr td:nth-of-type(${col})`).allInnerTexts()).reduce((n, v) => n + Number(v), 0);
    assert.deepEqual([await cells(1), await cells(2)], [succeeded, failed], await numbers.innerText());
    await page.getByLabel('Delivery success period').selectOption('day');
    await chart.getByText(/in the last 30 days succeeded\.$/).waitFor();
    await assertAccessibleAtBothWidths(page, 'a subscription with its delivery success chart');
    await page.screenshot({ path: `${screenshotDir()}/console-subscription.png`, fullPage: true });
  });

  it('the test send chooses its event type: the receiver gets a signed sample of it, listed under that type', async () => {
    await page.goto(`${base}/console/webhooks/${subscriptionId}`);
    const before = receiver.requests.length;
    await page.getByLabel('Test event type').selectOption('order.status_changed');
    await page.getByRole('button', { name: 'Send test event' }).click();
    await waitFor(async () => (receiver.requests.length > before ? true : undefined));
    assert.equal(verifiedType(secret, receiver.requests[before]), 'order.status_changed');
    const log = page.getByRole('region', { name: 'Messages' });
    await log.getByLabel('Event type').selectOption('order.status_changed');
    await log.getByRole('button', { name: 'Apply filters' }).click();
    await log.getByRole('heading', { level: 3, name: 'order.status_changed (test send) delivered' }).waitFor();
  });

  it('Event types, linked from Webhooks: each type with its schema and a sample', async () => {
    await openFromNavigation(page, 'Webhooks');
    await page.getByRole('main').getByRole('link', { name: 'Event types' }).click();
    await page.getByRole('heading', { level: 1, name: 'Event types' }).waitFor();
    const changed = page.getByRole('region', { name: 'order.status_changed' });
    await changed.getByRole('heading', { level: 3, name: 'Schema' }).waitFor();
    const [schema, sample] = await changed.locator('pre').allInnerTexts();
    assert.equal((JSON.parse(schema) as { properties: { type: { const: string } } }).properties.type.const, 'order.status_changed');
    assert.deepEqual((JSON.parse(sample) as { data: { reason: string } }).data.reason, 'INSUFFICIENT_STOCK');
    for (const name of ['order.created', 'order.cancelled', 'webhook.test']) await page.getByRole('region', { name }).waitFor();
    await assertAccessibleAtBothWidths(page, 'the event types', 'console-event-types-390.png');
  });

  it('Send test event and Rotate secret: the new secret is shown once, and deliveries verify with it', async () => {
    await page.goto(`${base}/console/webhooks/${subscriptionId}`);
    let before = receiver.requests.length;
    await page.getByRole('button', { name: 'Send test event' }).click();
    await waitFor(async () => (receiver.requests.length > before ? true : undefined));
    assert.equal(verifiedType(secret, receiver.requests[before]), 'webhook.test');

    await page.getByLabel('Old secret keeps signing for (hours)').fill('1');
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    const shown = page.getByRole('region', { name: 'Signing secret' });
    const rotated = await shown.getByLabel('Secret', { exact: true }).inputValue();
    assert.match(rotated, /^whsec_/);
    assert.notEqual(rotated, secret);
    await page.locator('dl.facts').getByText('Previous secret stops signing').waitFor();

    before = receiver.requests.length;
    await page.getByRole('button', { name: 'Send test event' }).click();
    await waitFor(async () => (receiver.requests.length > before ? true : undefined));
    const delivery = receiver.requests[before];
    assert.equal(String(delivery.headers['webhook-signature']).split(' ').length, 2, 'both secrets sign during the overlap');
    assert.equal(verifiedType(rotated, delivery), 'webhook.test');
    assert.equal(verifiedType(secret, delivery), 'webhook.test');
    secret = rotated;
    await shown.getByRole('button', { name: 'I have copied it' }).click();
  });

  it('Recover queues again the messages that failed since a time, and only those', async () => {
    const failedBefore = new Set((await messageStates()).filter((m) => m.status === 'failed').map((m) => m.message_id));
    assert.equal(failedBefore.size, 1, 'the message of the earlier order that was not resent');
    // the input takes whole seconds: the next second starts after every earlier failure
    await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000)));
    const since = new Date();
    receiver.respond = () => ({ status: 503, body: 'busy' });
    await settled(await placeOrder());
    const failed = (await messageStates()).filter((m) => m.status === 'failed' && !failedBefore.has(m.message_id)).map((m) => m.message_id);
    assert.equal(failed.length, 2);
    receiver.respond = () => ({ status: 200, body: 'ok' });
    const before = receiver.requests.length;
    const pad = (n: number) => String(n).padStart(2, '0');
    const local = `${since.getFullYear()}-${pad(since.getMonth() + 1)}-${pad(since.getDate())}T${pad(since.getHours())}:${pad(since.getMinutes())}:${pad(since.getSeconds())}`;
    await page.getByLabel('Failed since').fill(local);
    await page.getByRole('button', { name: 'Recover' }).click();
    await page.getByRole('status').filter({ hasText: '2 messages queued for delivery.' }).waitFor();
    await waitFor(async () => (receiver.requests.length >= before + 2 ? true : undefined));
    await settled();
    assert.deepEqual(receiver.requests.slice(before).map((r) => String(r.headers['webhook-id'])).sort(), [...failed].sort());
    const states = await messageStates();
    assert.deepEqual(states.filter((m) => failed.includes(m.message_id)).map((m) => m.status), ['delivered', 'delivered']);
    assert.deepEqual(states.filter((m) => m.status === 'failed').map((m) => m.message_id), [...failedBefore]);
  });

  it('changes the events and URL, disables and enables, and deletes after confirming (a toast says so)', async () => {
    await page.goto(`${base}/console/webhooks/${subscriptionId}`);
    const edit = page.locator('form').filter({ has: page.getByRole('button', { name: 'Save changes' }) });
    await edit.getByLabel('order.cancelled').check();
    await edit.getByLabel('URL').fill(`${receiver.url}?v=2`);
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').filter({ hasText: 'The subscription is saved.' }).waitFor();
    const stored = () => api(app, sam, { method: 'GET', url: `/api/v2/webhooks/subscriptions/${subscriptionId}` });
    const saved = (await stored()).json<{ url: string; events: string[]; is_active: boolean }>();
    assert.deepEqual([saved.url, [...saved.events].sort()], [`${receiver.url}?v=2`, ['order.cancelled', 'order.status_changed']]);

    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByRole('button', { name: 'Enable' }).waitFor();
    assert.equal((await stored()).json<{ is_active: boolean }>().is_active, false);
    await page.getByRole('button', { name: 'Enable' }).click();
    await page.getByRole('button', { name: 'Disable' }).waitFor();
    assert.equal((await stored()).json<{ is_active: boolean }>().is_active, true);

    await page.getByRole('button', { name: 'Delete' }).click();
    const dialog = page.getByRole('dialog', { name: `Delete subscription ${subscriptionId}?` });
    await assertAccessible(page, 'the delete dialog');
    await dialog.getByRole('button', { name: 'Yes, delete it' }).click();
    await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
    await page.getByRole('status').filter({ hasText: `Subscription ${subscriptionId} is deleted: nothing more is delivered to it.` }).waitFor();
    await page.getByText('You have no subscription yet.').waitFor();
    assert.equal((await stored()).statusCode, 404);
  });

  it('My orders: the own orders, each page without the staff parts; the owner cancels one', async () => {
    await openFromNavigation(page, 'My orders');
    const table = page.getByRole('table', { name: 'My orders' });
    await assertAccessible(page, 'my orders');
    const links = table.getByRole('link', { name: /^Order \d+$/ });
    await links.first().waitFor();
    assert.equal(await links.count(), 3);
    const name = await links.first().innerText();
    await links.first().click();
    await page.getByRole('heading', { level: 1, name }).waitFor();
    const timeline = page.getByRole('region', { name: 'Timeline' });
    await timeline.getByText('Status changed: processing → completed').waitFor();
    assert.equal(await timeline.getByText(/^Job:|^Delivery of|^Platform webhook/).count(), 0, 'no jobs, deliveries or platform webhooks');
    assert.doesNotMatch(await page.locator('dl.facts').innerText(), /Customer|Source/);
    await assertAccessible(page, 'an order of my own');

    await page.getByRole('button', { name: 'Cancel order' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Yes, cancel the order' }).click();
    await page.getByRole('status', { name: 'Order status' }).filter({ hasText: 'cancelled' }).waitFor();
    await timeline.getByText('Status changed: completed → cancelled').waitFor();
  });

  it('a session ended elsewhere (signed out everywhere): the next request brings back the sign-in form, saying why', async () => {
    // from the webhooks list, which neither polls nor follows order events (My orders reloads on
    // each event, and the previous test's cancel may still be on its way): nothing is in flight
    await openFromNavigation(page, 'Webhooks');
    await page.getByText('You have no subscription yet.').waitFor();
    const token = await consoleAccessToken(page);
    const everywhere = await app.inject({ method: 'POST', url: '/api/v2/auth/logout-all', headers: { authorization: `Bearer ${token}` } });
    assert.equal(everywhere.statusCode, 204, everywhere.body);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'My orders' }).click();
    await page.getByRole('status').filter({ hasText: 'Your session has ended. Sign in again.' }).waitFor();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('oas-console-session')), null);
    // the page's refused request, its event stream refused too, and the refresh the client tried
    assert.ok(trouble.errorAnswers.includes('401 GET /api/v2/orders'), trouble.errorAnswers.join(', '));
    assertNoTrouble(trouble, [/^401 GET \/api\/v2\/(orders|events)$/, /^401 POST \/api\/v2\/auth\/refresh$/]);
  });
});
