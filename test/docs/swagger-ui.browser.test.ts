import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { buildTestApp, createUser, TEST_PASSWORD } from '../helpers/app.ts';

const CHROMIUM = '/usr/bin/chromium';
const haveChromium = fs.existsSync(CHROMIUM);

/**
 * A real browser on the real docs page: sign in through the Authorize dialog (OAuth2 password flow
 * against the login route, form-encoded) and run "Try it out" on GET /auth/me. Chromium is required
 * in CI (the test fails without it); locally it is skipped when Chromium is not installed.
 */
describe('docs page in a real browser', { skip: !haveChromium && !process.env.CI ? `${CHROMIUM} not installed` : false }, () => {
  it('Authorize signs in through the login route and "Try it out" on GET /auth/me answers 200', async (t) => {
    assert.ok(haveChromium, `${CHROMIUM} is required (apt-get install chromium)`);
    const app = await buildTestApp(t);
    const alice = await createUser(app);
    await app.listen({ port: 0, host: '127.0.0.1' });
    const address = app.server.address();
    assert.ok(address && typeof address === 'object');
    const base = `http://127.0.0.1:${address.port}`;

    const browser: Browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
    });
    t.after(() => browser.close());
    const page = await browser.newPage();
    const failed: string[] = [];
    const consoleErrors: string[] = [];
    page.on('requestfailed', (req) => failed.push(`${req.method()} ${req.url()}: ${req.failure()?.errorText}`));
    page.on('console', (msg) => {
      if (msg.type() === 'error') consoleErrors.push(msg.text());
    });
    const loginRequests: string[] = [];
    page.on('request', (req) => {
      if (req.url().endsWith('/api/v1/auth/login')) loginRequests.push(req.headers()['content-type'] ?? '');
    });

    await page.goto(`${base}/docs`);
    await page.locator('.btn.authorize').first().click({ timeout: 15000 });
    await page.locator('#oauth_username').fill(alice.email);
    await page.locator('#oauth_password').fill(TEST_PASSWORD);
    await page.locator('.auth-btn-wrapper .btn.modal-btn.auth.authorize').click();
    // once authorised the dialog offers "Logout" instead of "Authorize"
    await page.locator('.auth-btn-wrapper .btn.modal-btn.auth', { hasText: 'Logout' }).waitFor({ timeout: 15000 });
    await page.locator('.btn-done').first().click();

    const operation = page.locator('.opblock', { has: page.locator('.opblock-summary-path', { hasText: /^\/api\/v1\/auth\/me$/ }) });
    await operation.locator('.opblock-summary').first().click();
    await operation.locator('.try-out__btn').click();
    await operation.locator('.execute').click();
    const status = operation.locator('.live-responses-table .response .response-col_status').first();
    await status.waitFor({ timeout: 15000 });
    assert.equal((await status.innerText()).trim(), '200');
    const body = await operation.locator('.live-responses-table .response-col_description pre').first().innerText();
    const me = JSON.parse(body) as { email: string; id: number };
    assert.equal(me.email, alice.email);
    assert.equal(me.id, alice.user.id);

    assert.ok(loginRequests.length >= 1, 'the dialog called the login route');
    assert.ok(loginRequests.every((ct) => ct.startsWith('application/x-www-form-urlencoded')), loginRequests.join(', '));
    assert.deepEqual(failed, [], 'no request of the page failed');
    assert.deepEqual(consoleErrors.filter((e) => /Content Security Policy|Refused to/i.test(e)), [], 'nothing blocked by CSP');
    await page.screenshot({ path: path.join(os.tmpdir(), 'oas-docs-try-it-out.png'), fullPage: false });
  });
});
