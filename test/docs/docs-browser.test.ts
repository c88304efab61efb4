import fs from 'node:fs';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chromium, type Browser } from 'playwright-core';
import { buildTestApp, createUser, defer, TEST_PASSWORD } from '../helpers/app.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const haveChromium = fs.existsSync(CHROMIUM);
// In CI a missing browser is a failure, not a silent skip.
const skip = !haveChromium && !process.env.CI ? `no Chromium at ${CHROMIUM}` : false;

describe('interactive docs in a real browser', { skip, timeout: 240000 }, () => {
  it('our title and icon, no top bar, the document from /openapi.json; Authorize with the password flow, then Try it out on GET /auth/me answers 200 with the user', async (t) => {
    assert.ok(haveChromium, `Chromium is required in CI (looked for ${CHROMIUM})`);
    const app = await buildTestApp(t);
    const user = await createUser(app);
    const base = await app.listen({ port: 0, host: '127.0.0.1' });

    const browser: Browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
        '--disable-quic',
      ],
    }); // a fresh temporary profile per launch
    defer(t, () => browser.close());
    const page = await browser.newPage();
    page.setDefaultTimeout(10000);

    const failed: string[] = [];
    const badResponses: string[] = [];
    const cspErrors: string[] = [];
    const pageErrors: string[] = [];
    page.on('requestfailed', (r) => failed.push(`${r.method()} ${r.url()}: ${r.failure()?.errorText}`));
    page.on('response', (r) => {
      if (r.status() >= 400) badResponses.push(`${r.status()} ${r.request().method()} ${r.url()}`);
    });
    page.on('console', (m) => {
      if (m.type() === 'error' && /content security policy/i.test(m.text())) cspErrors.push(m.text());
    });
    page.on('pageerror', (e) => pageErrors.push(e.message));

    const documentRequests: string[] = [];
    page.on('request', (r) => {
      if (/\/(openapi\.json|docs\/json)$/.test(new URL(r.url()).pathname)) documentRequests.push(new URL(r.url()).pathname);
    });
    const docs = await page.goto(`${base}/docs`);
    assert.equal(docs?.status(), 200);
    // the page renders under its own Content-Security-Policy (static CSP of @fastify/swagger-ui)
    assert.match((await docs?.allHeaders())?.['content-security-policy'] ?? '', /script-src/);
    await page.locator('.information-container .title').filter({ hasText: 'Order and Account Service' }).waitFor();

    // the page is ours: our title and icon, no top bar (third-party logo, "Explore" box), and the
    // document it shows is the one at /openapi.json
    assert.equal(await page.title(), 'Order and Account Service — API reference');
    assert.equal(await page.locator('.topbar').count(), 0, 'no top bar');
    assert.equal(await page.getByText('Explore', { exact: true }).count(), 0, 'no "Explore" button');
    assert.equal(await page.locator('img[src*="logo"], .topbar-wrapper img').count(), 0, 'no logo image');
    const icons = await page.locator('link[rel="icon"]').evaluateAll((links) => links.map((l) => l.getAttribute('href')));
    assert.deepEqual(icons, ['/docs/static/theme/favicon.svg']);
    const icon = await page.request.get(`${base}/docs/static/theme/favicon.svg`);
    assert.equal(icon.status(), 200);
    assert.match(await icon.text(), /<svg[^>]*>.*>OA</s);
    assert.deepEqual(documentRequests, ['/openapi.json'], 'the document is fetched from /openapi.json only');
    const source = page.locator('.information-container .info a.link, .information-container .info__url, .information-container a[href$="/openapi.json"]');
    assert.match((await source.first().getAttribute('href')) ?? '', /\/openapi\.json$/, 'the page names /openapi.json as its source');

    // Authorize: OAuth2 password flow against the login route
    await page.locator('.auth-wrapper button.authorize').click();
    const dialog = page.locator('.dialog-ux .modal-ux');
    await dialog.waitFor();
    await dialog.locator('input#oauth_username').fill(user.email);
    await dialog.locator('input#oauth_password').fill(TEST_PASSWORD);
    const login = page.waitForResponse((r) => r.url().endsWith('/api/v1/auth/login') && r.request().method() === 'POST');
    await dialog.locator('.auth-btn-wrapper button.authorize').click();
    assert.equal((await login).status(), 200);
    await dialog.locator('.auth-btn-wrapper button.btn-done, .auth-btn-wrapper button:has-text("Close")').first().click();
    await dialog.waitFor({ state: 'detached' });

    // GET /api/v1/auth/me: expand, Try it out, Execute
    const op = page.locator('.opblock-get').filter({ has: page.locator('[data-path="/api/v1/auth/me"]') });
    await op.locator('.opblock-summary-control').click();
    await op.locator('button.try-out__btn').click();
    const me = page.waitForResponse((r) => r.url().endsWith('/api/v1/auth/me'));
    await op.locator('button.execute').click();
    const meResponse = await me;
    assert.equal(meResponse.status(), 200);
    assert.match(meResponse.request().headers().authorization ?? '', /^Bearer ey/);

    // what the page shows: the live response section
    const live = op.locator('.live-responses-table .response');
    await live.waitFor();
    assert.equal((await live.locator('.response-col_status').innerText()).trim(), '200');
    const shown = await live.locator('.response-col_description .highlight-code pre').first().innerText();
    assert.equal(JSON.parse(shown).email, user.email);
    assert.equal(JSON.parse(shown).id, user.user.id);

    fs.mkdirSync('.tmp', { recursive: true });
    await live.scrollIntoViewIfNeeded();
    await page.screenshot({ path: '.tmp/docs-browser.png' });

    assert.deepEqual(failed, [], 'no request of the page failed');
    assert.deepEqual(badResponses, [], 'no request of the page got an error status');
    assert.deepEqual(cspErrors, [], 'no Content-Security-Policy violation');
    assert.deepEqual(pageErrors, [], 'no uncaught error in the page');
  });
});
