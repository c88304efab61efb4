import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type { Browser, Locator, Page } from 'playwright-core';
import { api, buildTestApp, createUser, defer, waitFor, type TestUser } from '../helpers/app.ts';
import { waitForFinal } from '../helpers/orders.ts';
import { createProduct } from '../helpers/products.ts';
import { fixturePayload, sendInbound, SHOPIFY_SECRET, startReceiver, type Receiver } from '../helpers/webhooks.ts';
import {
  assertAccessible,
  assertAccessibleAt,
  assertNoTrouble,
  builtConsole,
  consoleAccessToken,
  launchBrowser,
  newConsolePage,
  openFromNavigation,
  screenshotDir,
  signIn,
  skipWithoutChromium,
  type PageTrouble,
} from './console.helpers.ts';

const CHARTS = ['Orders per hour', 'Orders per day', 'Revenue per day', 'Delivery success rate', 'Products most often short', 'Inbound webhook outcomes'];
const CSV_HEADER = 'id,status,total_amount,currency,customer_id,customer_email,customer_name,source,external_id,failure_reason,created_at,updated_at';

describe("the console as an operator's product (overview, search, export, new product, finish), in Chromium", { skip: skipWithoutChromium, timeout: 300000 }, () => {
  let app: FastifyInstance;
  let base: string;
  let browser: Browser;
  let page: Page;
  let trouble: PageTrouble;
  let admin: TestUser;
  let jane: TestUser;
  let bob: TestUser;
  let receiver: Receiver;
  const ids = { lamp: 0, mug: 0, failed: 0, completed: 0, inbound: 0 };

  const placeOrder = async (who: TestUser, productId: number, quantity: number) => {
    const res = await api(app, who, { method: 'POST', url: '/api/v2/orders', payload: { items: [{ product_id: productId, quantity }], shipping_address: '7 Market Row' } });
    assert.equal(res.statusCode, 201, res.body);
    return res.json<{ id: number }>().id;
  };

  before(async () => {
    // the user cache off: a reload's GET /auth/me reaches the database (the last test stops it)
    app = await buildTestApp(undefined, { shopifyWebhookSecret: SHOPIFY_SECRET, currency: 'EUR', userCacheTtlSeconds: 0 }, { consoleDir: await builtConsole() });
    defer(undefined, () => app.close());
    admin = await createUser(app, { admin: true, email: 'operator@console.test', login: false });
    jane = await createUser(app, { email: 'jane.operator@example.com', fullName: 'Jane Operator', login: false });
    bob = await createUser(app, { email: 'bob.buyer@example.com', fullName: 'Bob Buyer', login: false });
    ids.lamp = (await createProduct(app, { name: 'Reading lamp', stock: 1, price: '40.00' })).id;
    ids.mug = (await createProduct(app, { name: 'Operator mug', stock: 50, price: '12.50' })).id;
    receiver = await startReceiver('/operator-hook');
    defer(undefined, () => receiver.close());
    const sub = await api(app, jane, { method: 'POST', url: '/api/v2/webhooks/subscriptions', payload: { url: receiver.url, events: ['order.created'] } });
    assert.equal(sub.statusCode, 201, sub.body);

    ids.failed = await placeOrder(jane, ids.lamp, 3);
    ids.completed = await placeOrder(jane, ids.mug, 2);
    const bobs = await placeOrder(bob, ids.mug, 1);
    for (const id of [ids.failed, ids.completed, bobs]) await waitForFinal(app, id);
    const body = JSON.stringify({ ...fixturePayload(), id: 990000000055, line_items: [{ sku: 'NO-SUCH-SKU', title: 'Ghost', quantity: 1, price: '5.00' }] });
    assert.equal((await sendInbound(app, body, { webhookId: 'operator-failed-1' })).statusCode, 200);
    ids.inbound = await waitFor(async () => {
      const row = await app.ctx.db.selectFrom('inbound_webhooks').select(['id', 'status']).where('webhook_id', '=', 'operator-failed-1').executeTakeFirst();
      return row?.status === 'failed' ? row.id : undefined;
    });
    await waitFor(async () => (receiver.requests.length >= 2 ? true : undefined));

    base = await app.listen({ port: 0, host: '127.0.0.1' });
    browser = await launchBrowser();
    ({ page, trouble } = await newConsolePage(browser, base));
  });

  it('signs in on the Overview: each chart an image with its name and a table of its numbers, there for screen readers unasked; money in the CURRENCY setting', async () => {
    await signIn(page, base, admin.email, admin.password);
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    for (const name of CHARTS) {
      await page.getByRole('img', { name, exact: true }).waitFor();
      const figure = page.getByRole('figure', { name, exact: true });
      // by role (in the accessibility tree) without pressing anything: the table is hidden from sight only
      await figure.getByRole('table', { name, exact: true }).waitFor({ state: 'attached' });
      const toggle = figure.getByRole('button', { name: `The numbers of “${name}”`, exact: true });
      assert.equal(await toggle.getAttribute('aria-expanded'), 'false', name);
    }
    // the button shows a table to sighted readers, who can then scroll it by keyboard
    const shown = page.getByRole('figure', { name: 'Orders per hour', exact: true });
    await shown.getByRole('button', { name: 'The numbers of “Orders per hour”' }).click();
    await waitFor(async () => (((await shown.getByRole('table').boundingBox())?.width ?? 0) > 100 ? true : undefined), 5000);
    assert.equal(await shown.getByRole('table').getAttribute('tabindex'), '0');
    assert.equal(await page.getByRole('figure', { name: 'Orders per day', exact: true }).getByRole('table').getAttribute('tabindex'), null, 'no focus stop on a table out of sight');
    const hourly = page.getByRole('table', { name: 'Orders per hour' });
    // the hour holding "24 hours ago" up to the one holding now
    assert.equal(await hourly.getByRole('row').count(), 26, 'the heading row and 25 hours');
    const totals = await hourly.locator('tbody tr td:last-child').allInnerTexts();
    assert.equal(totals.map(Number).reduce((a, b) => a + b, 0), 3, "the three orders of the last 24 hours, Jane's and Bob's");
    await page.getByRole('table', { name: 'Products most often short' }).getByRole('row', { name: /Reading lamp/ }).getByText('1', { exact: true }).waitFor();
    await page.getByRole('table', { name: 'Inbound webhook outcomes' }).getByRole('row', { name: /Failed/ }).getByText('1', { exact: true }).waitFor();
    // 2 × 12.50 + 1 × 12.50 completed, in euros
    await page.getByText('€37.50 from completed orders in the last 30 days.').waitFor();
    await page.getByText(/^100\.0% of \d+ delivery attempts? to subscribers in the last 30 days succeeded/).waitFor();
    await assertAccessible(page, 'the overview');
    await page.screenshot({ path: `${screenshotDir()}/console-overview.png`, fullPage: true });
  });

  it("Orders: the search finds an order by the customer's e-mail; the Customer column names them; a new order shows without a reload", async () => {
    await openFromNavigation(page, 'Orders');
    await page.getByRole('searchbox', { name: 'Search orders' }).fill('JANE.OPERATOR@');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/q=JANE\.OPERATOR/);
    const table = page.getByRole('table', { name: 'Orders' });
    await waitFor(async () => ((await table.getByRole('row').count()) === 3 ? true : undefined), 5000);
    for (const id of [ids.failed, ids.completed]) {
      const row = table.getByRole('row').filter({ has: page.getByRole('link', { name: `Order ${id}`, exact: true }) });
      assert.match(await row.innerText(), /Jane Operator\s+jane\.operator@example\.com/);
    }
    assert.match(await table.innerText(), /€25\.00/, 'the total in euros');

    const placed = await placeOrder(jane, ids.mug, 1);
    // live: the order event reaches the page; a generous bound for a busy machine
    await table.getByRole('link', { name: `Order ${placed}`, exact: true }).waitFor({ timeout: 5000 });
    await waitForFinal(app, placed);
  });

  it('Export CSV downloads the filtered list as a CSV file with its header row, and says so in a toast', async () => {
    const link = page.getByRole('link', { name: 'Export CSV' });
    const exportUrl = new URL(String(await link.getAttribute('href')), base);
    assert.equal(exportUrl.pathname, '/api/v2/admin/orders/export');
    assert.equal(exportUrl.searchParams.get('q'), 'JANE.OPERATOR@', 'the link carries the list\'s filters');
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
    assert.match(download.suggestedFilename(), /^orders-.+\.csv$/);
    const file = await download.path();
    const lines = fs.readFileSync(file, 'utf8').trim().split(/\r?\n/);
    assert.equal(lines[0], CSV_HEADER);
    assert.equal(lines.length, 4, "the header and Jane's three orders (the search applies)");
    assert.ok(
      lines.slice(1).every((l) => l.includes('jane.operator@example.com')),
      lines.join('\n'),
    );
    await page.getByRole('status').filter({ hasText: `The orders are exported: ${download.suggestedFilename()}.` }).waitFor();
  });

  it('Products: New product creates one; the toast says so and the catalogue lists it', async () => {
    await openFromNavigation(page, 'Products');
    await page.getByRole('link', { name: 'New product' }).click();
    await page.getByRole('heading', { level: 1, name: 'New product' }).waitFor();
    await assertAccessible(page, 'the new product page');
    await page.getByLabel('SKU').fill('OPS-TEAPOT');
    await page.getByLabel('Name').fill('Blue teapot');
    await page.getByLabel('Price (EUR)').fill('24.90');
    await page.getByLabel('Stock').fill('8');
    await page.getByRole('button', { name: 'Create product' }).click();
    await page.getByRole('heading', { level: 1, name: 'Products' }).waitFor();
    await page.getByRole('status').filter({ hasText: 'Blue teapot (OPS-TEAPOT) is in the catalogue at €24.90, 8 in stock.' }).waitFor();
    await page.getByRole('table', { name: 'Products' }).getByRole('row').filter({ hasText: 'OPS-TEAPOT' }).getByText('€24.90').waitFor();
    const stored = await app.ctx.db.selectFrom('products').select(['name', 'price', 'stock', 'is_active']).where('sku', '=', 'OPS-TEAPOT').executeTakeFirstOrThrow();
    assert.deepEqual([stored.name, String(stored.price), stored.stock, stored.is_active], ['Blue teapot', '24.90', 8, true]);

    // the same SKU again: the API's answer in words, on the form
    await page.goto(`${base}/console/products/new`);
    await page.getByLabel('SKU').fill('OPS-TEAPOT');
    await page.getByLabel('Name').fill('Another teapot');
    await page.getByLabel('Price (EUR)').fill('1');
    await page.getByRole('button', { name: 'Create product' }).click();
    await page.getByRole('alert').waitFor();
    assert.equal(await page.getByRole('heading', { level: 1, name: 'New product' }).count(), 1);
  });

  it('dates read "… ago" with the exact time on hover: an order, the subscriptions, a subscription and its messages, a message', async () => {
    const relative = async (time: Locator, what: string, words = /ago|now/) => {
      await time.waitFor();
      assert.match(await time.innerText(), words, what);
      const title = await time.getAttribute('title');
      assert.ok(title && /\d{1,2}:\d{2}/.test(title), `${what}: the exact time on hover: ${title}`);
    };
    await page.goto(`${base}/console/orders/${ids.completed}`);
    await relative(page.locator('dl.facts time').first(), 'an order created');

    // the administrator's own subscription: its secret rotated (the old one signs for an hour more), a test message delivered
    const created = await api(app, admin, { method: 'POST', url: '/api/v2/webhooks/subscriptions', payload: { url: receiver.url, events: ['order.created'] } });
    assert.equal(created.statusCode, 201, created.body);
    const subscriptionId = created.json<{ id: number }>().id;
    const rotated = await api(app, admin, { method: 'POST', url: `/api/v2/webhooks/subscriptions/${subscriptionId}/rotate-secret`, payload: { overlap_seconds: 3600 } });
    assert.equal(rotated.statusCode, 200, rotated.body);
    const sent = await api(app, admin, { method: 'POST', url: `/api/v2/webhooks/subscriptions/${subscriptionId}/test`, payload: {} });
    assert.equal(sent.statusCode, 202, sent.body);
    const messageId = sent.json<{ message_id: string }>().message_id;
    await waitFor(async () => {
      const row = await app.ctx.db.selectFrom('webhook_messages').select('status').where('message_id', '=', messageId).executeTakeFirst();
      return row?.status === 'delivered' ? true : undefined;
    });

    await openFromNavigation(page, 'Webhooks');
    const row = page.getByRole('table', { name: 'Subscriptions' }).getByRole('row').filter({ has: page.getByRole('link', { name: `Subscription ${subscriptionId}`, exact: true }) });
    await relative(row.locator('time'), 'a subscription created');

    await page.goto(`${base}/console/webhooks/${subscriptionId}`);
    await relative(page.locator('dl.facts time'), 'the previous secret stops signing', /^in /);
    const message = page.getByRole('region', { name: 'Messages' }).getByRole('article').filter({ has: page.getByRole('link', { name: messageId }) });
    await relative(message.locator('p time'), 'a message created');
    await relative(message.getByRole('list', { name: `Attempts of ${messageId}` }).locator('time'), 'an attempt made');

    await message.getByRole('link', { name: messageId }).click();
    await page.getByRole('heading', { level: 1, name: `Message ${messageId}` }).waitFor();
    const facts = page.locator('dl.facts time');
    await relative(facts.nth(0), 'a message created');
    await relative(facts.nth(1), 'a message settled');
    await relative(page.getByRole('table', { name: 'Attempts' }).locator('time'), 'an attempt made');
  });

  it('the skip link moves the focus to the main content', async () => {
    await page.goto(`${base}/console/users`);
    await page.getByRole('heading', { level: 1, name: 'Users' }).waitFor();
    // (expressions, not functions: the tests are type-checked without the DOM's types)
    await page.evaluate('document.activeElement?.blur()');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate('document.activeElement?.textContent'), 'Skip to content');
    await page.keyboard.press('Enter');
    await waitFor(async () => ((await page.evaluate('document.activeElement?.id')) === 'main' ? true : undefined), 5000);
    assert.equal(new URL(page.url()).pathname, '/console/users', 'the page stays');
  });

  it('every page: no serious or critical axe finding and no sideways scrolling, at 1366 and at 390 px wide', async () => {
    const pages: [string, (p: Page) => Promise<void>][] = [
      ['/overview', (p) => p.getByRole('img', { name: 'Inbound webhook outcomes' }).waitFor()],
      [`/orders/${ids.failed}`, (p) => p.getByRole('region', { name: 'Timeline' }).getByText('Reading lamp: wanted 3, available 1').waitFor()],
      ['/inbound-webhooks', (p) => p.getByRole('link', { name: `Webhook ${ids.inbound}` }).waitFor()],
      [`/inbound-webhooks/${ids.inbound}`, (p) => p.getByRole('table', { name: 'Headers' }).waitFor()],
      ['/users', (p) => p.getByRole('cell', { name: jane.email, exact: true }).waitFor()],
      ['/products', (p) => p.getByRole('cell', { name: 'Operator mug', exact: true }).waitFor()],
      ['/products/new', (p) => p.getByLabel('SKU').waitFor()],
      ['/my-orders', (p) => p.getByText('You have no orders').waitFor()],
      ['/webhooks', (p) => p.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor()],
      ['/orders', (p) => p.getByRole('link', { name: `Order ${ids.failed}`, exact: true }).waitFor()],
    ];
    for (const width of [1366, 390]) {
      for (const [path, ready] of pages) {
        await page.goto(`${base}/console${path}`);
        await ready(page);
        await assertAccessibleAt(page, width, path, width === 390 && path === '/overview' ? 'console-overview-390.png' : undefined);
      }
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('Reprocess of a webhook that fails again: the toast gives the new outcome, and no word of "queued" stays beside State: failed', async () => {
    await page.goto(`${base}/console/inbound-webhooks/${ids.inbound}`);
    const facts = page.locator('dl.facts');
    await facts.getByText('failed', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Reprocess' }).click();
    await page.getByRole('status').filter({ hasText: `Webhook ${ids.inbound} failed again: unknown SKU: NO-SUCH-SKU.` }).waitFor();
    await facts.getByText('failed', { exact: true }).waitFor();
    assert.equal(await page.getByText(/queued/).count(), 0, 'the queued notice is replaced by the outcome');
    await page.getByRole('button', { name: 'Reprocess' }).waitFor();
  });

  it('a reload while the service answers 503 keeps the session (also when the access token needs a refresh), and says it is waiting for the service', async () => {
    await page.goto(`${base}/console/orders`);
    await page.getByRole('heading', { level: 1, name: 'Orders' }).waitFor();
    const token = await consoleAccessToken(page);
    await app.ctx.database.close();
    const me = await app.inject({ method: 'GET', url: '/api/v2/auth/me', headers: { authorization: `Bearer ${token}` } });
    assert.equal(me.statusCode, 503, 'the service answers GET /auth/me with 503 now');

    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Waiting for the service' }).waitFor();
    await page.getByRole('alert').filter({ hasText: 'The service is not available at the moment.' }).waitFor();
    assert.equal(await consoleAccessToken(page), token, 'the tokens are kept');
    assert.equal(await page.getByRole('button', { name: 'Sign in' }).count(), 0, 'not signed out');
    await assertAccessible(page, 'the page waiting for the service');

    // an access token the service no longer takes (as an expired one): GET /auth/me answers 401, and
    // the refresh the client tries meets the same 503, so the session stays too
    const session = "sessionStorage.getItem('oas-console-session')";
    const saved = JSON.parse(String(await page.evaluate(session))) as { accessToken: string; refreshToken: string };
    await page.evaluate(`sessionStorage.setItem('oas-console-session', ${JSON.stringify(JSON.stringify({ ...saved, accessToken: 'not.a.token' }))})`);
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Waiting for the service' }).waitFor();
    await page.getByRole('alert').filter({ hasText: 'The service is not available at the moment.' }).waitFor();
    assert.equal((JSON.parse(String(await page.evaluate(session))) as { refreshToken: string }).refreshToken, saved.refreshToken, 'the refresh token is kept');
    assert.equal(await page.getByRole('button', { name: 'Sign in' }).count(), 0, 'not signed out');
    assertNoTrouble(trouble, [/^503 /, /^400 POST \/api\/v2\/products$/, /^401 GET \/api\/v2\/auth\/me$/]);
  });
});
