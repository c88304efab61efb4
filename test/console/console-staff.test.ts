import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { api, buildTestApp, createUser, defer, waitFor, type TestUser } from '../helpers/app.ts';
import { waitForFinal } from '../helpers/orders.ts';
import { createProduct, stockOf } from '../helpers/products.ts';
import { fixturePayload, seedProduct, sendInbound, SHOPIFY_SECRET } from '../helpers/webhooks.ts';
import {
  assertAccessible,
  assertNoTrouble,
  builtConsole,
  launchBrowser,
  navigationLinks,
  newConsolePage,
  openFromNavigation,
  screenshotDir,
  skipWithoutChromium,
  type PageTrouble,
} from './console.helpers.ts';

/** The most bytes the first load of /console may transfer (the 250 KB). */
const FIRST_LOAD_BUDGET = 250_000;

describe('the console for staff, in Chromium', { skip: skipWithoutChromium, timeout: 300000 }, () => {
  let app: FastifyInstance;
  let base: string;
  let browser: Browser;
  let page: Page;
  let trouble: PageTrouble;
  let admin: TestUser;
  let jane: TestUser;
  const products = { lampId: 0, mugId: 0 };

  const placeOrder = async (lines: { product_id: number; quantity: number }[]) => {
    const res = await api(app, jane, { method: 'POST', url: '/api/v2/orders', payload: { items: lines, shipping_address: '12 Harbour Street' } });
    assert.equal(res.statusCode, 201, res.body);
    return res.json<{ id: number }>().id;
  };
  const timeline = () => page.getByRole('region', { name: 'Timeline' });
  const orderStatus = () => page.getByRole('status', { name: 'Order status' });

  before(async () => {
    const consoleDir = await builtConsole();
    app = await buildTestApp(undefined, { shopifyWebhookSecret: SHOPIFY_SECRET }, { consoleDir });
    defer(undefined, () => app.close());
    admin = await createUser(app, { admin: true, email: 'staff@console.test', login: false });
    jane = await createUser(app, { email: 'jane.console@example.com', fullName: 'Jane Console', login: false });
    products.lampId = (await createProduct(app, { name: 'Reading lamp', stock: 1 })).id;
    products.mugId = (await createProduct(app, { name: 'Console mug', stock: 50 })).id;
    base = await app.listen({ port: 0, host: '127.0.0.1' });
    browser = await launchBrowser();
    ({ page, trouble } = await newConsolePage(browser, base));
  });

  it('first load: the sign-in page from this origin only, compressed, under 250 KB; wrong password in plain words; then the staff navigation', async () => {
    const transferred = new Map<string, { bytes: number; encoding: string | undefined }>();
    page.on('requestfinished', (request) => {
      void (async () => {
        const sizes = await request.sizes();
        const response = await request.response();
        transferred.set(new URL(request.url()).pathname, {
          bytes: sizes.responseHeadersSize + sizes.responseBodySize,
          encoding: (await response?.allHeaders())?.['content-encoding'],
        });
      })();
    });
    await page.goto(`${base}/console`, { waitUntil: 'networkidle' });
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    const assets = () => [...transferred.keys()].filter((f) => f.startsWith('/console/assets/'));
    await waitFor(async () => (assets().length === 2 && transferred.has('/console') ? true : undefined), 5000);
    page.removeAllListeners('requestfinished');
    const total = [...transferred.values()].reduce((sum, r) => sum + r.bytes, 0);
    assert.deepEqual(assets().map((f) => f.replace(/-[A-Z0-9]+\./, '.')).sort(), ['/console/assets/console.css', '/console/assets/console.js']);
    // besides the page and its two assets at most the icon (a headless browser may not ask for it)
    assert.deepEqual([...transferred.keys()].filter((f) => !f.startsWith('/console/assets/') && f !== '/console/favicon.svg'), ['/console']);
    for (const [file, r] of transferred) {
      if (file.startsWith('/console/assets/')) assert.equal(r.encoding, 'br', `${file} is sent compressed`);
    }
    assert.ok(total > 1000 && total < FIRST_LOAD_BUDGET, `first load transferred ${total} bytes: ${JSON.stringify([...transferred])}`);
    console.log(`# first load of /console: ${total} bytes transferred in ${transferred.size} responses`);
    await assertAccessible(page, 'the sign-in page');

    await page.getByLabel('E-mail').fill(admin.email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'The e-mail or the password is not right.' }).waitFor();

    await page.getByLabel('Password').fill(admin.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    assert.deepEqual(await navigationLinks(page), ['Overview', 'Orders', 'Inbound webhooks', 'Users', 'Products', 'Webhooks', 'My orders']);
  });

  it("a failed order: found by status and the customer's e-mail; its page says which product was short, wanted against available, by name", async () => {
    const failedId = await placeOrder([{ product_id: products.lampId, quantity: 3 }]);
    await placeOrder([{ product_id: products.mugId, quantity: 1 }]);
    assert.equal((await waitForFinal(app, failedId)).status, 'failed');

    await openFromNavigation(page, 'Orders');
    await page.getByLabel('Status').selectOption('failed');
    await page.getByLabel('Customer e-mail').fill('JANE.console@example.com');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    const table = page.getByRole('table', { name: 'Orders' });
    await page.waitForURL(/status=failed/);
    await waitFor(async () => ((await table.getByRole('row').count()) === 2 ? true : undefined), 5000);
    await assertAccessible(page, 'the orders page');

    await table.getByRole('link', { name: `Order ${failedId}` }).click();
    await page.getByRole('heading', { level: 1, name: `Order ${failedId}` }).waitFor();
    await orderStatus().filter({ hasText: 'failed' }).waitFor();
    await timeline().getByText('Reading lamp: wanted 3, available 1').waitFor();
    await timeline().getByText('Status changed: processing → failed').waitFor();
    await timeline().getByText('Job: Order processing').waitFor();
    assert.match(await page.locator('dl.facts').innerText(), /Jane Console <jane\.console@example\.com>/);
    assert.equal(await page.getByRole('button', { name: 'Cancel order' }).count(), 0, 'a failed order cannot be cancelled');
    await assertAccessible(page, 'a failed order');
  });

  it('the order page shows a status change made elsewhere within a few seconds; Cancel order asks first, then releases the stock', async () => {
    const first = await placeOrder([{ product_id: products.mugId, quantity: 1 }]);
    assert.equal((await waitForFinal(app, first)).status, 'completed');
    await page.goto(`${base}/console/orders/${first}`);
    await orderStatus().filter({ hasText: 'completed' }).waitFor();
    const cancelled = await api(app, jane, { method: 'POST', url: `/api/v2/orders/${first}/cancel`, payload: {} });
    assert.equal(cancelled.statusCode, 200, cancelled.body);
    // the page follows GET /api/v2/events, and reads the order again once its stream opens (a cancel
    // may come before that); a generous bound for a busy machine, no reload
    await orderStatus().filter({ hasText: 'cancelled' }).waitFor({ timeout: 5000 });

    const second = await placeOrder([{ product_id: products.mugId, quantity: 2 }]);
    assert.equal((await waitForFinal(app, second)).status, 'completed');
    const stockBefore = await stockOf(app, products.mugId);
    await page.goto(`${base}/console/orders/${second}`);
    await page.getByRole('button', { name: 'Cancel order' }).click();
    const dialog = page.getByRole('dialog', { name: `Cancel order ${second}?` });
    await dialog.waitFor();
    await assertAccessible(page, 'the cancel dialog');
    await dialog.getByRole('button', { name: 'Keep the order' }).click();
    await dialog.waitFor({ state: 'hidden' });
    assert.equal(await stockOf(app, products.mugId), stockBefore, 'keeping the order changes nothing');

    await page.getByRole('button', { name: 'Cancel order' }).click();
    await dialog.getByLabel('Reason (optional)').fill('customer called');
    await dialog.getByRole('button', { name: 'Yes, cancel the order' }).click();
    await orderStatus().filter({ hasText: 'cancelled' }).waitFor();
    await timeline().getByText('Status changed: completed → cancelled').waitFor();
    await timeline().getByText('Reason given: customer called').waitFor();
    assert.equal(await stockOf(app, products.mugId), stockBefore + 2, 'the stock of the cancelled order is back');
    assert.equal(await page.getByRole('button', { name: 'Cancel order' }).count(), 0);
  });

  it('a failed platform webhook: its headers, body and error; Reprocess once the product exists turns it into an order', async () => {
    const sku = 'CONSOLE-DESK-LAMP';
    const body = JSON.stringify({ ...fixturePayload(), id: 990000000047, line_items: [{ sku, title: 'Desk lamp', quantity: 2, price: '30.00' }] });
    assert.equal((await sendInbound(app, body, { webhookId: 'console-failed-1' })).statusCode, 200);
    const webhookId = await waitFor(async () => {
      const row = await app.ctx.db.selectFrom('inbound_webhooks').select(['id', 'status']).where('webhook_id', '=', 'console-failed-1').executeTakeFirst();
      return row?.status === 'failed' ? row.id : undefined;
    });

    await openFromNavigation(page, 'Inbound webhooks');
    await page.getByLabel('State').selectOption('failed');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/status=failed/);
    const table = page.getByRole('table', { name: 'Inbound webhooks' });
    await table.getByRole('row').filter({ hasText: `unknown SKU: ${sku}` }).waitFor();
    await assertAccessible(page, 'the inbound webhooks page');
    await table.getByRole('link', { name: `Webhook ${webhookId}` }).click();

    await page.getByRole('heading', { level: 1, name: `Inbound webhook ${webhookId}` }).waitFor();
    await page.locator('dl.facts').getByText(`unknown SKU: ${sku}`).waitFor();
    const headers = page.getByRole('table', { name: 'Headers' });
    assert.equal(await headers.getByRole('rowheader', { name: 'x-shopify-webhook-id' }).count(), 1);
    assert.equal(await headers.getByRole('rowheader', { name: 'x-shopify-hmac-sha256' }).count(), 0, 'no signature shown');
    assert.match(await page.locator('pre.code').innerText(), new RegExp(`"sku": "${sku}"`));
    await assertAccessible(page, 'a failed inbound webhook');

    const desk = await seedProduct(app, sku, { price: '30.00', stock: 5 });
    await page.getByRole('button', { name: 'Reprocess' }).click();
    const orderLink = page.locator('dl.facts').getByRole('link', { name: /^Order \d+$/ });
    await orderLink.waitFor();
    await page.locator('dl.facts').getByText('processed', { exact: true }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Reprocess' }).count(), 0);
    const orderName = await orderLink.innerText();
    await orderLink.click();
    await page.getByRole('heading', { level: 1, name: orderName }).waitFor();
    await timeline().getByText('Platform webhook received: orders/create').waitFor();
    await timeline().getByText('Platform webhook processed').waitFor();
    await orderStatus().filter({ hasText: 'completed' }).waitFor();
    assert.match(await page.locator('dl.facts').innerText(), /Platform order 990000000047/);
    assert.equal(await stockOf(app, desk.id), 3, 'the platform order took its two units');
    await page.screenshot({ path: `${screenshotDir()}/console-platform-order.png`, fullPage: true });
  });

  it('users: a search by e-mail; deactivate and activate a customer', async () => {
    await openFromNavigation(page, 'Users');
    await page.getByLabel('Search by e-mail').fill('JANE.CONSOLE');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/email=JANE\.CONSOLE/);
    const table = page.getByRole('table', { name: 'Users' });
    const row = table.getByRole('row').filter({ hasText: jane.email });
    await row.waitFor();
    assert.equal(await table.getByRole('row').count(), 2, 'the heading row and Jane');
    await assertAccessible(page, 'the users page');

    await row.getByRole('button', { name: 'Deactivate' }).click();
    const dialog = page.getByRole('dialog', { name: `Deactivate ${jane.email}?` });
    await dialog.getByText('This ends every session of the account').waitFor();
    await dialog.getByRole('button', { name: 'Yes, deactivate' }).click();
    await row.getByText('Deactivated').waitFor();
    await page.getByRole('status').filter({ hasText: `${jane.email} is deactivated and signed out everywhere.` }).waitFor();
    const stored = () => app.ctx.db.selectFrom('users').select('is_active').where('id', '=', jane.user.id).executeTakeFirstOrThrow();
    assert.equal((await stored()).is_active, false);
    await row.getByRole('button', { name: 'Activate' }).click();
    await row.getByText('Active', { exact: true }).waitFor();
    assert.equal((await stored()).is_active, true);
  });

  it('lists are paged by the API: a page of 20, then the next page asked for', async () => {
    for (let i = 1; i <= 23; i++) await createUser(app, { email: `pager-${String(i).padStart(2, '0')}@console.test`, login: false });
    const asked: string[] = [];
    const listener = (r: { url: () => string }) => {
      if (r.url().includes('/api/v2/admin/users?')) asked.push(new URL(r.url()).search);
    };
    page.on('request', listener);
    await page.goto(`${base}/console/users?email=pager-`);
    const table = page.getByRole('table', { name: 'Users' });
    await table.getByRole('row').filter({ hasText: 'pager-20@console.test' }).waitFor();
    assert.equal(await table.getByRole('row').count(), 21, 'the heading row and 20 users');
    const pages = page.getByRole('navigation', { name: 'Pages of users' });
    await pages.getByText('Page 1 of 2 · 23 users').waitFor();
    await pages.getByRole('link', { name: 'Next page' }).click();
    await table.getByRole('row').filter({ hasText: 'pager-23@console.test' }).waitFor();
    assert.equal(await table.getByRole('row').count(), 4, 'the heading row and the last 3 users');
    await pages.getByRole('link', { name: 'Previous page' }).waitFor();
    page.off('request', listener);
    assert.deepEqual(
      asked.map((q) => Object.fromEntries(new URLSearchParams(q))),
      [
        { page: '1', page_size: '20', email: 'pager-' },
        { page: '2', page_size: '20', email: 'pager-' },
      ],
    );
  });

  it('products: stock shown; price and stock edited in place', async () => {
    await openFromNavigation(page, 'Products');
    const table = page.getByRole('table', { name: 'Products' });
    await table.getByRole('row').filter({ hasText: 'Console mug' }).waitFor();
    await assertAccessible(page, 'the products page');
    await table.getByRole('button', { name: 'Edit Console mug' }).click();
    await page.getByLabel('Price of Console mug').fill('12.34');
    await page.getByLabel('Stock of Console mug').fill('77');
    await assertAccessible(page, 'a product being edited');
    await table.getByRole('button', { name: 'Save' }).click();
    const row = table.getByRole('row').filter({ hasText: 'Console mug' });
    await row.getByText('12.34').waitFor();
    await row.getByText('77', { exact: true }).waitFor();
    const stored = await app.ctx.db.selectFrom('products').select(['price', 'stock']).where('id', '=', products.mugId).executeTakeFirstOrThrow();
    assert.deepEqual([String(stored.price), stored.stock], ['12.34', 77]);
  });

  it('signs out: the sign-in form again, and the refresh token is revoked', async () => {
    const saved = JSON.parse((await page.evaluate(() => sessionStorage.getItem('oas-console-session'))) ?? '{}') as { refreshToken?: string };
    assert.ok(saved.refreshToken);
    // the pages leave, the console revokes the session, and only then shows the sign-in form
    const revoked = page.waitForResponse((r) => new URL(r.url()).pathname === '/api/v2/auth/logout');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await page.getByRole('status').filter({ hasText: 'You are signed out.' }).waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('oas-console-session')), null);
    assert.equal((await revoked).status(), 204);
    const refresh = await app.inject({ method: 'POST', url: '/api/v2/auth/refresh', payload: { refresh_token: saved.refreshToken } });
    assert.equal(refresh.statusCode, 401);
    assertNoTrouble(trouble, [/^401 POST \/api\/v2\/auth\/login$/]);
  });
});

