import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig, ConfigError } from '../../src/config.ts';
import { buildTestApp, errorBody } from '../helpers/app.ts';

const TOKEN = 'metrics-scraper-token-0123456789';

describe('/metrics protection', () => {
  it('with METRICS_TOKEN, /metrics answers only that bearer token; every other caller gets 401 in the error shape', async (t) => {
    const app = await buildTestApp(t, { metricsToken: TOKEN });
    for (const authorization of [undefined, 'Bearer wrong-token-0123456789abcdef', `Bearer ${TOKEN}x`, `Basic ${TOKEN}`, `Bearer ${TOKEN.slice(0, -1)}`, 'Bearer']) {
      const res = await app.inject({ method: 'GET', url: '/metrics', headers: authorization ? { authorization } : {} });
      assert.equal(res.statusCode, 401, `${authorization}: ${res.statusCode}`);
      assert.equal(errorBody(res).error_code, 'NOT_AUTHENTICATED');
      assert.doesNotMatch(res.body, /http_request_duration_seconds|nodejs_version/);
    }
    const ok = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(ok.statusCode, 200);
    assert.match(ok.body, /nodejs_version_info/);
    // the liveness and readiness probes stay open
    assert.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 200);
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    assert.ok(doc.paths['/metrics'].get.responses['401'], '401 documented');
  });

  it('without METRICS_TOKEN /metrics stays open (a scraper on the private network needs no secret)', async (t) => {
    const app = await buildTestApp(t);
    assert.equal((await app.inject({ method: 'GET', url: '/metrics' })).statusCode, 200);
  });

  it('METRICS_TOKEN is checked at start-up', () => {
    assert.equal(loadConfig({ METRICS_TOKEN: TOKEN }).metricsToken, TOKEN);
    for (const bad of ['short', 'has a space in it 0123456789', 'x'.repeat(600)]) {
      assert.throws(() => loadConfig({ METRICS_TOKEN: bad }), ConfigError, bad);
    }
  });
});
