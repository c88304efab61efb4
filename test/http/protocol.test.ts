import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, errorBody, type TestUser } from '../helpers/app.ts';

/** Writes `request` on a fresh connection and returns everything the server sends until it closes. */
function rawExchange(port: number, request: string | ((socket: net.Socket) => void), timeoutMs = 15000): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let response = '';
    socket.on('connect', () => (typeof request === 'string' ? socket.write(request) : request(socket)));
    socket.on('data', (d) => (response += d.toString()));
    socket.on('error', () => socket.destroy());
    socket.on('close', () => resolve(response));
    setTimeout(() => socket.destroy(), timeoutMs).unref();
  });
}

/** Status, headers (lower-case names) and JSON body of a raw HTTP/1.1 response. */
function parseRaw(raw: string): { status: number; headers: Record<string, string>; body: { detail?: unknown; error_code?: unknown } } {
  const [head, ...rest] = raw.split('\r\n\r\n');
  const [statusLine, ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(rest.join('\r\n')) };
}

const json = { 'content-type': 'application/json' };

describe('HTTP protocol answers', () => {
  let app: FastifyInstance;
  let user: TestUser;
  let port: number;
  before(async () => {
    app = await buildTestApp(undefined, { requestTimeoutMs: 800, bodyLimitBytes: 64 * 1024 });
    user = await createUser(app);
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as net.AddressInfo).port;
  });
  after(() => app.close());

  it('an unsupported method on a known path is 405 with Allow; an unknown path stays 404', async () => {
    for (const [method, url, allow] of [
      ['TRACE', '/health', 'GET, HEAD'],
      ['PUT', '/api/v1/users/1', 'GET, HEAD, PATCH, DELETE'],
      ['DELETE', '/api/v1/auth/login', 'POST'],
      ['POST', '/api/v1/users/1?x=1', 'GET, HEAD, PATCH, DELETE'],
      // methods no route takes: QUERY (a body method Fastify would read, and refuse without a
      // Content-Type before any route is asked), WebDAV's PROPFIND
      ['QUERY', '/api/v1/items', 'GET, HEAD, POST'],
      ['PROPFIND', '/api/v1/items', 'GET, HEAD, POST'],
    ] as const) {
      const res = await api(app, user, { method, url });
      assert.equal(res.statusCode, 405, `${method} ${url}: ${res.statusCode} ${res.body}`);
      assert.equal(res.headers.allow, allow, `${method} ${url}`);
      assert.equal(errorBody(res).error_code, 'METHOD_NOT_ALLOWED');
    }
    for (const [method, url] of [
      ['GET', '/api/v1/nothing'],
      ['PUT', '/api/v1/nothing/1'],
      ['TRACE', '/nowhere'],
      ['QUERY', '/nowhere'],
    ] as const) {
      const res = await api(app, user, { method, url });
      assert.equal(res.statusCode, 404, `${method} ${url}: ${res.statusCode}`);
      assert.equal(res.headers.allow, undefined);
      assert.equal(errorBody(res).error_code, 'NOT_FOUND');
    }
  });

  it('every /api/v1 response, success or error, carries Cache-Control: no-store', async () => {
    for (const [who, method, url] of [
      [user, 'GET', '/api/v1/auth/me'],
      [null, 'GET', '/api/v1/auth/me'],
      [user, 'GET', '/api/v1/nothing'],
      [user, 'PUT', '/api/v1/users/1'],
      [user, 'GET', '/api/v1/items?limit=0'],
      [null, 'POST', '/api/v1/auth/login'],
    ] as const) {
      const res = await api(app, who, { method, url, payload: method === 'POST' ? { username: user.email, password: user.password } : undefined });
      assert.equal(res.headers['cache-control'], 'no-store', `${method} ${url} (${res.statusCode})`);
    }
    // the documentation and operations endpoints are not API responses
    assert.equal((await app.inject({ method: 'GET', url: '/health' })).headers['cache-control'], undefined);
  });

  it("Node's own refusals answer in the error shape with a code: bad request line 400, oversized headers 431, timeout 408", async () => {
    const badLine = parseRaw(await rawExchange(port, 'GARBAGE\r\n\r\n'));
    assert.equal(badLine.status, 400);
    assert.deepEqual(badLine.body, { detail: 'Malformed HTTP request', error_code: 'BAD_REQUEST' });
    assert.match(badLine.headers['content-type'], /^application\/json/);

    const badHeader = parseRaw(await rawExchange(port, 'GET /health HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n'));
    assert.equal(badHeader.status, 400);
    assert.equal(badHeader.body.error_code, 'BAD_REQUEST');

    const big = parseRaw(await rawExchange(port, `GET /health HTTP/1.1\r\nHost: x\r\nX-Padding: ${'p'.repeat(20 * 1024)}\r\n\r\n`));
    assert.equal(big.status, 431);
    assert.deepEqual(big.body, { detail: 'Request headers are too large', error_code: 'HEADERS_TOO_LARGE' });

    // headers that never end: the request timeout (800 ms here) answers 408
    const slow = parseRaw(await rawExchange(port, (s) => s.write('GET /health HTTP/1.1\r\nHost: x\r\n')));
    assert.equal(slow.status, 408);
    assert.deepEqual(slow.body, { detail: 'Request timed out', error_code: 'REQUEST_TIMEOUT' });
  });

  it('a method a path does not take is 405 whatever its body: malformed, nested, oversized or of another type', async () => {
    for (const [type, payload] of [
      ['application/json', '{bad'],
      ['application/json', `${'['.repeat(64)}${']'.repeat(64)}`],
      ['application/json', JSON.stringify({ note: 'x'.repeat(128 * 1024) })],
      ['text/plain', 'hello'],
    ] as const) {
      const res = await api(app, user, { method: 'PUT', url: '/api/v1/orders', headers: { 'content-type': type }, payload });
      assert.equal(res.statusCode, 405, `${type} ${payload.slice(0, 20)}: ${res.body}`);
      assert.equal(res.headers.allow, 'GET, HEAD, POST');
    }
    // and an unknown path is 404 before its body is read
    const unknown = await api(app, user, { method: 'POST', url: '/api/v1/nothing', headers: json, payload: '{bad' });
    assert.equal(unknown.statusCode, 404, unknown.body);
  });

  it('QUERY over a real connection, with a body and no Content-Type, is 405 with Allow, not 400', async () => {
    const res = parseRaw(await rawExchange(port, 'QUERY /api/v1/orders HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}'));
    assert.equal(res.status, 405);
    assert.equal(res.headers.allow, 'GET, HEAD, POST');
    assert.equal(res.body.error_code, 'METHOD_NOT_ALLOWED');
  });

  it('a declared body over the limit is 413 in the error shape before any of it is read', async () => {
    const res = parseRaw(
      await rawExchange(port, `POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n{`),
    );
    assert.equal(res.status, 413);
    assert.equal(res.body.error_code, 'PAYLOAD_TOO_LARGE');
    assert.equal(typeof res.body.detail, 'string');
  });
});
