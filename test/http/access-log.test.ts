import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { AccessLogController } from '../../src/http/access-log.ts';
import { api, LogCapture, buildTestApp, createUser } from '../helpers/app.ts';

/** The access log (src/http/access-log.ts): one line per request at info, its arrival at debug. */
describe('access log', () => {
  const linesOf = (logs: LogCapture, msg: string) => logs.parsed().filter((l) => l.msg === msg);

  it('at info: one "request completed" line per request with its method, URL, client, status and time; no arrival line', async (t) => {
    const logs = new LogCapture();
    const app = await buildTestApp(t, { logLevel: 'info' }, { logStream: logs });
    const user = await createUser(app, { login: false });
    const before = logs.lines.length;
    const ok = await api(app, user, { method: 'GET', url: '/api/v1/items?limit=5', headers: { 'x-request-id': 'access-log-ok' } });
    assert.equal(ok.statusCode, 200);
    const missing = await api(app, user, { method: 'GET', url: '/api/v1/items/999999', headers: { 'x-request-id': 'access-log-404' } });
    assert.equal(missing.statusCode, 404);

    const written = logs.parsed().slice(before);
    const completed = written.filter((l) => l.msg === 'request completed');
    assert.deepEqual(
      completed.map((l) => [l.reqId, l.level, (l.req as { method: string }).method, (l.req as { url: string }).url, (l.res as { statusCode: number }).statusCode]),
      [
        ['access-log-ok', 30, 'GET', '/api/v1/items?limit=5', 200],
        ['access-log-404', 30, 'GET', '/api/v1/items/999999', 404],
      ],
    );
    for (const line of completed) {
      assert.equal(typeof line.responseTime, 'number');
      assert.equal((line.req as { remoteAddress: string }).remoteAddress, '127.0.0.1');
      assert.equal(typeof line.time, 'number');
      assert.equal(typeof line.pid, 'number');
    }
    assert.equal(linesOf(logs, 'incoming request').length, 0, 'arrivals are debug lines');
  });

  it('at debug: "incoming request" when a request arrives, before its "request completed"', async (t) => {
    const logs = new LogCapture();
    const app = await buildTestApp(t, { logLevel: 'debug' }, { logStream: logs });
    const res = await app.inject({ method: 'GET', url: '/health', headers: { 'x-request-id': 'access-log-debug' } });
    assert.equal(res.statusCode, 200);
    const mine = logs.parsed().filter((l) => l.reqId === 'access-log-debug');
    assert.deepEqual(
      mine.map((l) => [l.msg, l.level]),
      [
        ['incoming request', 20],
        ['request completed', 30],
      ],
    );
    assert.deepEqual(mine[0].req, mine[1].req);
  });

  it('at warn: no access lines', async (t) => {
    const logs = new LogCapture();
    const app = await buildTestApp(t, { logLevel: 'warn' }, { logStream: logs });
    await app.inject({ method: 'GET', url: '/health' });
    assert.equal(linesOf(logs, 'request completed').length + linesOf(logs, 'incoming request').length, 0);
  });
});

describe('access log without a logger of its own (a terminal)', () => {
  it("writes the same line through the request's own logger", async () => {
    const logs = new LogCapture();
    const app = Fastify({ logger: { level: 'info', stream: logs }, logController: new AccessLogController() });
    app.get('/ping', async () => ({ ok: true }));
    const res = await app.inject({ method: 'GET', url: '/ping', headers: { 'x-request-id': 'ignored' } });
    assert.equal(res.statusCode, 200);
    await app.close();
    const lines = logs.parsed();
    assert.deepEqual(
      lines.map((l) => [l.msg, (l.req as { url: string }).url, (l.res as { statusCode: number }).statusCode, typeof l.reqId]),
      [['request completed', '/ping', 200, 'string']],
    );
  });
});
