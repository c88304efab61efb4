import fs from 'node:fs';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { chromium, type Browser, type Page } from 'playwright-core';
import { buildTestApp, createUser, defer, TEST_PASSWORD } from '../helpers/app.ts';
import { pageOrder, type Doc as OrderedDoc } from '../helpers/docs-order.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const haveChromium = fs.existsSync(CHROMIUM);
// In CI a missing browser is a failure, not a silent skip.
const skip = !haveChromium && !process.env.CI ? `no Chromium at ${CHROMIUM}` : false;

interface Doc {
  paths: Record<string, Record<string, { requestBody?: { content: Record<string, { example?: unknown }> } }>>;
}

const PAGES = {
  v1: { page: '/docs', document: '/openapi.json', prefix: '/api/v1' },
  v2: { page: '/docs/v2', document: '/openapi-v2.json', prefix: '/api/v2' },
} as const;

async function launch(t: Parameters<typeof defer>[0]): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
  }); // a fresh temporary profile per launch
  defer(t, () => browser.close());
  return browser;
}

/** Everything that went wrong in the page: failed requests, error statuses it did not ask for, CSP violations, uncaught errors. */
function watch(page: Page, expectedErrors: RegExp[] = []) {
  const problems: string[] = [];
  const documents: string[] = [];
  page.on('requestfailed', (r) => problems.push(`failed: ${r.method()} ${r.url()}: ${r.failure()?.errorText}`));
  page.on('response', (r) => {
    const line = `${r.status()} ${r.request().method()} ${new URL(r.url()).pathname}`;
    if (r.status() >= 400 && !expectedErrors.some((e) => e.test(line))) problems.push(line);
  });
  page.on('request', (r) => {
    const path = new URL(r.url()).pathname;
    if (/\/(openapi(-v2)?\.json|json)$/.test(path)) documents.push(path);
  });
  page.on('console', (m) => {
    if (m.type() === 'error' && /content security policy/i.test(m.text())) problems.push(`CSP: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  return { problems, documents };
}

async function open(page: Page, base: string, path: string): Promise<void> {
  const res = await page.goto(`${base}${path}`);
  assert.equal(res?.status(), 200, path);
  await page.locator('.information-container .title').filter({ hasText: 'Order and Account Service' }).waitFor();
}

/** Expands the operation, presses Try it out and Execute; the response the page got. */
async function tryItOut(page: Page, method: string, path: string, check: (op: ReturnType<Page['locator']>) => Promise<void>) {
  const op = page.locator(`.opblock-${method.toLowerCase()}`).filter({ has: page.locator(`[data-path="${path}"]`) });
  await op.locator('.opblock-summary-control').click();
  await op.locator('button.try-out__btn').click();
  await check(op);
  const template = new RegExp(`^${path.replace(/\{\w+\}/g, '[^/]+')}$`);
  const answered = page.waitForResponse((r) => r.request().method() === method && template.test(new URL(r.url()).pathname));
  await op.locator('button.execute').click();
  const res = await answered;
  const live = op.locator('.live-responses-table .response');
  await live.waitFor();
  return { res, status: (await live.locator('.response-col_status').innerText()).trim(), body: await live.locator('.response-col_description .highlight-code pre').first().innerText() };
}

async function documentOf(app: FastifyInstance, url: string): Promise<Doc> {
  return (await app.inject({ method: 'GET', url })).json<Doc>();
}

/** The operations as the page lists them, top to bottom: `method path`. */
function listedOnPage(page: Page): Promise<string[]> {
  return page.locator('.opblock').evaluateAll((blocks) =>
    blocks.map((b) => `${/\bopblock-(get|post|put|patch|delete)\b/.exec(b.className)?.[1]} ${b.querySelector('[data-path]')?.getAttribute('data-path')}`),
  );
}
const documentedOrder = (doc: Doc) => pageOrder(doc as unknown as OrderedDoc).map((o) => `${o.method} ${o.path}`);

const operationCount = (doc: Doc) =>
  Object.values(doc.paths).reduce((n, item) => n + Object.keys(item).filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m)).length, 0);

describe('interactive docs in a real browser', { skip, timeout: 240000 }, () => {
  it('each version on its own page with its own document, a switch between them, Authorize with e-mail and password only, and Try it out with the default bodies: POST /orders 201 (v1), cancel 200 (v2)', async (t) => {
    assert.ok(haveChromium, `Chromium is required in CI (looked for ${CHROMIUM})`);
    // a fresh start's demo catalogue: the examples order its first product
    const app = await buildTestApp(t, { seedDemoCatalog: true });
    const user = await createUser(app);
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    const page = await (await launch(t)).newPage();
    // the context's pages (a popup too): Swagger UI renders a document in 10 to 30 s on a busy two-core machine
    page.context().setDefaultTimeout(60000);
    const { problems, documents } = watch(page);

    // v1: /docs, its own document only, every operation of it on the page
    const v1 = await documentOf(app, PAGES.v1.document);
    await open(page, base, PAGES.v1.page);
    assert.equal(await page.title(), 'Order and Account Service — API v1 reference');
    assert.deepEqual(documents.splice(0), [PAGES.v1.document], 'v1 loads /openapi.json only');
    assert.equal(await page.locator('.opblock').count(), operationCount(v1));
    // top to bottom as the docs-from-the-top test runs them: each deletion after what uses what it deletes
    assert.deepEqual(await listedOnPage(page), documentedOrder(v1));
    assert.match((await page.locator('.information-container a[href$="/openapi.json"]').first().getAttribute('href')) ?? '', /\/openapi\.json$/);
    // the page is ours: our icon, no top bar (third-party logo, "Explore" box)
    assert.equal(await page.locator('.topbar').count(), 0, 'no top bar');
    assert.deepEqual(await page.locator('link[rel="icon"]').evaluateAll((links) => links.map((l) => l.getAttribute('href'))), ['/docs/static/theme/favicon.svg']);
    assert.match((await page.request.get(`${base}/docs/static/theme/favicon.svg`)).headers()['content-type'] ?? '', /svg/);
    // tags by their names, each with its description; summaries as plain text
    const orders = page.locator('.opblock-tag-section').filter({ has: page.locator('h3[data-tag="Orders"]') });
    assert.match(await orders.locator('h3').innerText(), /^Orders\s+Place your orders/);
    assert.equal(await page.locator('.opblock-summary-description', { hasText: '`' }).count(), 0, 'no backticks in summaries');

    // the version switch: v1 marked as the current page, a link to v2
    const nav = page.locator('nav.version-switch');
    assert.equal(await nav.locator('[aria-current="page"]').innerText().then((s) => s.startsWith('API v1')), true);
    assert.equal(await nav.locator('a').getAttribute('href'), PAGES.v2.page);

    // Authorize: the password flow's username and password, nothing else
    await page.locator('.auth-wrapper button.authorize').click();
    const dialog = page.locator('.dialog-ux .modal-ux');
    await dialog.waitFor();
    for (const hidden of ['#client_id_password', '#client_secret_password', '#password_type', '.scope-def']) {
      assert.equal(await dialog.locator(hidden).isVisible(), false, `${hidden} is not shown`);
    }
    assert.deepEqual(await dialog.locator('input:visible').evaluateAll((inputs) => inputs.map((i) => i.id)), ['oauth_username', 'oauth_password']);
    await dialog.locator('input#oauth_username').fill(user.email);
    await dialog.locator('input#oauth_password').fill(TEST_PASSWORD);
    const login = page.waitForResponse((r) => r.url().endsWith('/api/v1/auth/login') && r.request().method() === 'POST');
    await dialog.locator('.auth-btn-wrapper button.authorize').click();
    assert.equal((await login).status(), 200);
    await dialog.locator('.auth-btn-wrapper button.btn-done').click();
    await dialog.waitFor({ state: 'detached' });

    // POST /orders with the body the page fills in: the document's example, answered 201
    const orderExample = v1.paths['/api/v1/orders'].post.requestBody?.content['application/json'].example;
    const placed = await tryItOut(page, 'POST', '/api/v1/orders', async (op) => {
      assert.deepEqual(JSON.parse(await op.locator('textarea.body-param__text').inputValue()), orderExample);
      assert.match(await op.locator('.response[data-code="201"] .response-col_description').innerText(), /^Created/);
    });
    assert.equal(placed.status, '201', placed.body);
    assert.equal(placed.res.request().postDataJSON().shipping_address, (orderExample as { shipping_address: string }).shipping_address);
    assert.match(placed.res.request().headers().authorization ?? '', /^Bearer ey/);
    const order = JSON.parse(placed.body) as { id: number; status: string; user_id: number };
    assert.equal(order.user_id, user.user.id);

    // to v2 through the switch: its own document, its operations, the cancel route among them
    await nav.locator('a').click();
    await page.waitForURL(`${base}${PAGES.v2.page}`);
    await page.locator('.information-container .title').waitFor();
    const v2 = await documentOf(app, PAGES.v2.document);
    assert.equal(await page.title(), 'Order and Account Service — API v2 reference');
    assert.deepEqual(documents.splice(0), [PAGES.v2.document], 'v2 loads /openapi-v2.json only');
    assert.equal(await page.locator('.opblock').count(), operationCount(v2));
    assert.deepEqual(await listedOnPage(page), documentedOrder(v2));
    assert.ok(operationCount(v2) > operationCount(v1));
    assert.equal(await page.locator('nav.version-switch [aria-current="page"]').innerText().then((s) => s.startsWith('API v2')), true);
    // still signed in: the page keeps the authorization
    assert.equal(await page.locator('.auth-wrapper button.authorize.locked').count(), 1);

    // cancel with the page's defaults: the order the example above made, and the example's reason
    const cancelExample = v2.paths['/api/v2/orders/{order_id}/cancel'].post.requestBody?.content['application/json'].example;
    const cancelled = await tryItOut(page, 'POST', '/api/v2/orders/{order_id}/cancel', async (op) => {
      assert.equal(await op.locator('tr[data-param-name="order_id"] input').inputValue(), String(order.id));
      assert.deepEqual(JSON.parse(await op.locator('textarea.body-param__text').inputValue()), cancelExample);
    });
    assert.equal(cancelled.status, '200', cancelled.body);
    assert.equal(new URL(cancelled.res.url()).pathname, `/api/v2/orders/${order.id}/cancel`);
    assert.equal(JSON.parse(cancelled.body).status, 'cancelled');

    fs.mkdirSync('.tmp', { recursive: true });
    await page.screenshot({ path: '.tmp/docs-browser.png' });
    assert.deepEqual(problems, [], 'nothing went wrong in the page');
  });

  it("the v1 description's link and /docs?version=v2 lead to the v2 page, which renders its document", async (t) => {
    assert.ok(haveChromium, `Chromium is required in CI (looked for ${CHROMIUM})`);
    const app = await buildTestApp(t);
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    const page = await (await launch(t)).newPage();
    // the context's pages (a popup too): Swagger UI renders a document in 10 to 30 s on a busy two-core machine
    page.context().setDefaultTimeout(60000);
    const { problems, documents } = watch(page);

    // Swagger UI opens the description's links in a new tab
    await open(page, base, PAGES.v1.page);
    const [linked] = await Promise.all([
      page.waitForEvent('popup'),
      page.locator('.information-container .description a', { hasText: PAGES.v2.page }).click(),
    ]);
    const linkedWatch = watch(linked);
    await linked.locator('.information-container .title .version', { hasText: '2.0.0' }).waitFor();
    assert.equal(new URL(linked.url()).pathname, PAGES.v2.page);
    await linked.close();

    const earlier = await page.goto(`${base}/docs?version=v2`);
    assert.equal(new URL(earlier?.url() ?? '').pathname, PAGES.v2.page);
    await page.locator('.information-container .title .version', { hasText: '2.0.0' }).waitFor();
    assert.ok(await page.locator('[data-path="/api/v2/orders/{order_id}/cancel"]').isVisible());
    assert.equal(await page.getByText('Unable to render this definition').count(), 0);
    assert.deepEqual(documents, [PAGES.v1.document, PAGES.v2.document]);
    assert.deepEqual([...problems, ...linkedWatch.problems], []);
  });
});
