import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { accepts, CONSOLE_CSP } from '../../src/http/console.ts';
import { buildTestApp, defer, errorBody } from '../helpers/app.ts';
import { builtConsole } from './console.helpers.ts';

describe('serving the console: one page for every /console address, hashed assets, its own policy', () => {
  let app: FastifyInstance;
  let index: string;

  before(async () => {
    app = await buildTestApp(undefined, {}, { consoleDir: await builtConsole() });
    defer(undefined, () => app.close());
    index = (await app.inject({ method: 'GET', url: '/console' })).body;
  });

  const assetsOf = (html: string) => [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);

  it('answers /console and any address under it with the page, under a policy with nothing inline, no eval and no other host', async () => {
    for (const url of ['/console', '/console/', '/console/orders/12?status=failed', '/console/webhooks/3/messages/msg_abc']) {
      const res = await app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 200, url);
      assert.equal(res.body, index, url);
      assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
      assert.equal(res.headers['content-security-policy'], CONSOLE_CSP);
      assert.equal(res.headers['cache-control'], 'no-cache');
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
    }
    assert.doesNotMatch(CONSOLE_CSP, /unsafe|https?:|\*/);
    assert.match(CONSOLE_CSP, /script-src 'self'/);
    assert.match(CONSOLE_CSP, /default-src 'none'/);
    // the page names only its own files, and holds no script of its own
    assert.deepEqual(
      assetsOf(index).map((a) => a.replace(/-[A-Z0-9]+\./, '.')).sort(),
      ['/console/assets/console.css', '/console/assets/console.js', '/console/favicon.svg'],
    );
    assert.doesNotMatch(index, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
    assert.doesNotMatch(index, /\sstyle=|<style/, 'no inline style');
  });

  it('sends each asset compressed as the browser accepts it (brotli, else gzip, else as is), to keep for good', async () => {
    for (const asset of assetsOf(index).filter((a) => a.startsWith('/console/assets/'))) {
      const plain = await app.inject({ method: 'GET', url: asset });
      assert.equal(plain.statusCode, 200, asset);
      assert.equal(plain.headers['content-encoding'], undefined);
      assert.equal(plain.headers['cache-control'], 'public, max-age=31536000, immutable');
      assert.equal(plain.headers.vary, 'accept-encoding');
      assert.match(String(plain.headers['content-type']), asset.endsWith('.js') ? /^text\/javascript/ : /^text\/css/);
      const br = await app.inject({ method: 'GET', url: asset, headers: { 'accept-encoding': 'gzip, deflate, br, zstd' } });
      assert.equal(br.headers['content-encoding'], 'br');
      assert.ok(br.rawPayload.length < plain.rawPayload.length);
      assert.deepEqual(zlib.brotliDecompressSync(br.rawPayload), plain.rawPayload);
      const gzip = await app.inject({ method: 'GET', url: asset, headers: { 'accept-encoding': 'br;q=0, gzip' } });
      assert.equal(gzip.headers['content-encoding'], 'gzip');
      assert.deepEqual(zlib.gunzipSync(gzip.rawPayload), plain.rawPayload);
    }
    const missing = await app.inject({ method: 'GET', url: '/console/assets/console-NOPE.js' });
    assert.equal(missing.statusCode, 404);
    assert.equal(errorBody(missing).error_code, 'NOT_FOUND');
    const icon = await app.inject({ method: 'GET', url: '/console/favicon.svg' });
    assert.equal(icon.headers['content-type'], 'image/svg+xml');
  });

  it('reads Accept-Encoding as HTTP does: a coding with q=0 is refused', () => {
    assert.equal(accepts('gzip, br', 'br'), true);
    assert.equal(accepts('gzip;q=1.0, br;q=0.5', 'br'), true);
    assert.equal(accepts('br;q=0', 'br'), false);
    assert.equal(accepts('br; q=0.0, gzip', 'br'), false);
    assert.equal(accepts('BR', 'br'), true);
    assert.equal(accepts('brotli', 'br'), false);
    assert.equal(accepts(undefined, 'gzip'), false);
  });

  it('is not in the OpenAPI documents', async () => {
    for (const url of ['/openapi.json', '/openapi-v2.json']) {
      const doc = (await app.inject({ method: 'GET', url })).json<{ paths: Record<string, unknown> }>();
      assert.deepEqual(Object.keys(doc.paths).filter((p) => p.startsWith('/console')), [], url);
    }
  });

  it('not built (an install without dev dependencies): the service runs, and /console says how to build it', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'oas-no-console-'));
    defer(undefined, async () => fs.rmSync(empty, { recursive: true, force: true }));
    const bare = await buildTestApp(undefined, {}, { consoleDir: empty });
    defer(undefined, () => bare.close());
    const res = await bare.inject({ method: 'GET', url: '/console/orders' });
    assert.equal(res.statusCode, 503);
    assert.equal(res.headers['content-security-policy'], CONSOLE_CSP);
    assert.match(res.body, /npm ci/);
    assert.equal((await bare.inject({ method: 'GET', url: '/health' })).statusCode, 200);
  });
});
