import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chromium, type Browser } from 'playwright-core';
import { api, buildTestApp, createUser, defer } from '../helpers/app.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const haveChromium = fs.existsSync(CHROMIUM);
// In CI a missing browser is a failure, not a silent skip.
const skip = !haveChromium && !process.env.CI ? `no Chromium at ${CHROMIUM}` : false;

/** A page server: the origin a browser application is served from. */
async function pageOrigin(): Promise<{ origin: string; close: () => Promise<void> }> {
  const server = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>app</title>'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { origin: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

interface FetchOutcome {
  status?: number;
  error?: string;
  rateLimit?: string | null;
  body?: unknown;
}

describe('CORS from a real browser page on another origin', { skip, timeout: 300000 }, () => {
  it('PATCH and DELETE succeed from an allowed origin (rate-limit headers readable) and fail from another', async (t) => {
    assert.ok(haveChromium, `Chromium is required in CI (looked for ${CHROMIUM})`);
    const allowed = await pageOrigin();
    defer(t, allowed.close);
    const other = await pageOrigin();
    defer(t, other.close);
    const app = await buildTestApp(t, { corsOrigins: [allowed.origin] });
    const user = await createUser(app);
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    const newItem = async () => (await api(app, user, { method: 'POST', url: '/api/v1/items', payload: { name: 'before', price: 1 } })).json<{ id: number }>().id;

    const browser: Browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
    });
    defer(t, () => browser.close());
    const page = await browser.newPage();
    page.setDefaultTimeout(20000);

    /** fetch() run by the page itself, so the browser applies CORS (preflight included). */
    const fetchFrom = (origin: string, method: string, path: string, body?: unknown) =>
      page.goto(origin).then(() =>
        page.evaluate(
          async ({ url, method, token, body }): Promise<FetchOutcome> => {
            try {
              const res = await fetch(url, {
                method,
                headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': `k-${Math.random()}` },
                body: body === undefined ? undefined : JSON.stringify(body),
              });
              const text = await res.text();
              return { status: res.status, rateLimit: res.headers.get('x-ratelimit-limit'), body: text ? JSON.parse(text) : null };
            } catch (err) {
              return { error: String(err) };
            }
          },
          { url: `${base}${path}`, method, token: user.token, body },
        ),
      );

    const patched = await newItem();
    const patch = await fetchFrom(allowed.origin, 'PATCH', `/api/v1/items/${patched}`, { name: 'patched' });
    assert.equal(patch.status, 200, JSON.stringify(patch));
    assert.equal((patch.body as { name: string }).name, 'patched');
    assert.ok(patch.rateLimit, 'X-RateLimit-Limit is exposed to the page');
    const deleted = await newItem();
    const del = await fetchFrom(allowed.origin, 'DELETE', `/api/v1/items/${deleted}`);
    assert.ok(del.status === 200 || del.status === 204, JSON.stringify(del));
    assert.equal((await api(app, user, { method: 'GET', url: `/api/v1/items/${deleted}` })).statusCode, 404);

    const untouched = await newItem();
    const refusedPatch = await fetchFrom(other.origin, 'PATCH', `/api/v1/items/${untouched}`, { name: 'patched' });
    assert.match(refusedPatch.error ?? '', /TypeError|Failed to fetch/, JSON.stringify(refusedPatch));
    const refusedDelete = await fetchFrom(other.origin, 'DELETE', `/api/v1/items/${untouched}`);
    assert.match(refusedDelete.error ?? '', /TypeError|Failed to fetch/, JSON.stringify(refusedDelete));
    // the preflight was refused, so neither request reached the route
    const item = await api(app, user, { method: 'GET', url: `/api/v1/items/${untouched}` });
    assert.equal(item.statusCode, 200);
    assert.equal(item.json<{ name: string }>().name, 'before');
  });
});
