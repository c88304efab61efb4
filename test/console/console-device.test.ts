import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, createUser, defer, uniquePrefix } from '../helpers/app.ts';
import { assertNoTrouble, builtConsole, launchBrowser, newConsolePage, signIn, skipWithoutChromium } from './console.helpers.ts';

/** The per-client limit in this test; the per-e-mail ceiling is ten times it. */
const MAX = 3;

/**
 * Issue 54's "throttle, don't lock" through the console: the browser keeps the `device` cookie of
 * its sign-in (same origin, no code of the console's own), so a flood that throttles every other
 * client by the e-mail's ceiling still lets the holder's browser in.
 */
describe('the console and device tokens, in Chromium', { skip: skipWithoutChromium, timeout: 180000 }, () => {
  it("a browser that signed in before signs in through a flood that throttles every other client", async () => {
    const consoleDir = await builtConsole();
    const app = await buildTestApp(undefined, { loginThrottleMaxFailures: MAX, rateLimitKeyPrefix: uniquePrefix() }, { consoleDir });
    defer(undefined, () => app.close());
    const holder = await createUser(app, { email: 'holder@device.test', login: false });
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    const browser = await launchBrowser();

    const known = await newConsolePage(browser, base);
    await signIn(known.page, base, holder.email, holder.password);
    const device = (await known.page.context().cookies(`${base}/api/v1/auth/login`)).find((c) => c.name === 'device');
    assert.ok(device, 'the sign-in left a device cookie');
    assert.deepEqual([device.httpOnly, device.sameSite, device.path], [true, 'Strict', '/api']);
    await known.page.getByRole('button', { name: 'Sign out' }).click();
    await known.page.getByRole('button', { name: 'Sign in' }).waitFor();

    // the flood: wrong passwords from other clients, each up to its own limit, until the
    // e-mail's ceiling refuses a new client's first guess: the browsers below start from that
    // state, seen, not from a count of clients assumed to reach it
    const guess = (client: number) =>
      app.inject({ method: 'POST', url: '/api/v1/auth/login', remoteAddress: `198.51.100.${client}`, payload: { username: holder.email, password: 'wrong password' } });
    let client = 1;
    let first = await guess(client);
    for (; first.statusCode === 401 && client < 40; first = await guess(++client)) {
      for (let i = 0; i < MAX; i++) await guess(client);
    }
    assert.equal(first.json().error_code, 'LOGIN_THROTTLED', `the flood's client ${client} meets the e-mail's ceiling`);
    assert.ok(client > 10, `${10 * MAX} failures from 10 clients throttle no one else (client ${client})`);

    // a browser without the cookie meets the e-mail's ceiling, even with the right password
    const fresh = await newConsolePage(browser, base);
    await fresh.page.goto(`${base}/console`);
    await fresh.page.getByLabel('E-mail').fill(holder.email);
    await fresh.page.getByLabel('Password').fill(holder.password);
    await fresh.page.getByRole('button', { name: 'Sign in' }).click();
    await fresh.page.getByRole('alert').getByText(/^Too many failed sign-ins\. Wait \d+ seconds and try again\.$/).waitFor();

    // the holder's browser sends its cookie by itself and is let in
    await signIn(known.page, base, holder.email, holder.password);
    assertNoTrouble(known.trouble);
    assertNoTrouble(fresh.trouble, [/^429 POST \/api\/v2\/auth\/login$/]);
  });
});
