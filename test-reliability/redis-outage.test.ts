import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Deployment, pick, randInt } from './helpers/deployment.ts';
import { redisCommand, sleep, until } from './helpers/infra.ts';
import { adminLogin, call, createUsers, runBounded, Stats, type Result } from './helpers/http.ts';
import { printTable, round } from './helpers/report.ts';
import type { ServiceProcess } from './helpers/service.ts';

/**
 * Scenario 4 — the (private) Redis is stopped under load and started again. Redis only holds the
 * shared rate-limit counters: the service keeps serving on per-process counters (the switch logged
 * once each way), /ready reports `degraded` (200), and the counters are shared again once Redis is
 * back, without restarting anything.
 */
const DOWN_MS = 5000;
// the request rate limiter's own lines; the sign-in attempt counter logs its switches under its own label
const FALLBACK_MSG = 'rate limiting: Redis unavailable, falling back to per-process counters';
const BACK_MSG = 'rate limiting: Redis is back';

describe('reliability: Redis stopped during load', () => {
  let d: Deployment;
  let apis: ServiceProcess[];

  before(async () => {
    d = await Deployment.create({ redis: true });
    const env = { LOG_LEVEL: 'info', RATE_LIMIT_AUTHENTICATED: '100000' };
    const started = await d.start(d.options('api', env, 'api-1'), d.options('api', env, 'api-2'), d.options('worker', {}, 'worker-1'));
    apis = started.filter((p) => p.role === 'api');
  });

  after(async () => {
    await d?.destroy();
  });

  it('keeps serving on per-process counters, /ready degraded, shared counters again after recovery', async () => {
    const redis = d.redis!;
    const admin = await adminLogin(apis[0].baseUrl);
    const users = await createUsers(apis[0].baseUrl, admin.access, 4, 'redis');
    const initial = await d.inspector.seedProducts('RDS', [10000, 10000]);
    const productIds = [...initial.keys()];

    const results: { at: number; r: Result }[] = [];
    const ready: { at: number; status: number; body: { status?: string; checks?: Record<string, string> } }[] = [];
    const accepted: number[] = [];
    let stop = false;
    let n = 0;
    const readyPoller = (async () => {
      for (let i = 0; i < 600 && !stop; i++) {
        const r = await call(apis[i % 2].baseUrl, 'GET', '/ready', { timeoutMs: 5000 });
        ready.push({ at: Date.now(), status: r.status, body: r.body as never });
        await sleep(200);
      }
    })();
    const load = runBounded(4, { maxTasks: 100000, until: () => stop }, async () => {
      const i = n++;
      const u = users[i % users.length];
      const base = apis[i % 2].baseUrl;
      let r: Result;
      if (i % 3 === 0) {
        r = await call(base, 'POST', '/api/v1/orders', { token: u.token, body: { items: [{ product_id: pick(productIds), quantity: randInt(1, 3) }], shipping_address: 'Redis Row' } });
        if (r.status === 201) accepted.push((r.body as { id: number }).id);
      } else if (i % 3 === 1) {
        r = await call(base, 'GET', '/api/v1/orders', { token: u.token });
      } else {
        r = await call(base, 'POST', '/api/v1/auth/login', { body: { username: u.email, password: 'reliability-user-pass' } });
      }
      results.push({ at: Date.now(), r });
    });

    await sleep(3000);
    const downAt = Date.now();
    await redis.stopServer('SIGTERM');
    await sleep(DOWN_MS);
    await redis.startServer();
    const upAt = Date.now();
    const recoveredAt = await until(
      'both API processes to report Redis ok',
      async () => {
        const rs = await Promise.all(apis.map((a) => call(a.baseUrl, 'GET', '/ready')));
        return rs.every((r) => (r.body as { checks?: Record<string, string> }).checks?.redis === 'ok') ? Date.now() : undefined;
      },
      30000,
      200,
    );
    await sleep(3000);
    stop = true;
    await load;
    await readyPoller;

    // shared again: a fresh user's requests through both processes land on one Redis counter
    const [probe] = await createUsers(apis[0].baseUrl, admin.access, 1, 'redis-probe');
    for (let i = 0; i < 6; i++) {
      const r = await call(apis[i % 2].baseUrl, 'GET', '/api/v1/auth/me', { token: probe.token });
      assert.equal(r.status, 200);
    }
    // each request is counted in Redis before it is answered (src/http/rate-limits.ts)
    const counter = (await redisCommand(redis.port, 'GET', `oas:rl:user:${probe.id}`)).split('\r\n').pop() ?? '';

    await d.inspector.waitAllFinal(accepted, 60000);
    const all = new Stats();
    const during = new Stats();
    for (const t of results) {
      all.add(t.r);
      if (t.at > downAt && t.at < upAt) during.add(t.r);
    }
    const readyDown = ready.filter((x) => x.at > downAt + 1000 && x.at < upAt);
    const fallbackLogs = apis.map((a) => a.logLines(FALLBACK_MSG).length);
    const backLogs = apis.map((a) => a.logLines(BACK_MSG).length);

    printTable('scenario 4: Redis stopped for 5 s under load, then started', [
      ['requests', all.count],
      ['statuses (whole run)', all.statuses()],
      ['requests served while Redis was down', `${during.count} (${during.statuses()})`],
      ['latency p95 / max while down (ms)', `${round(during.percentile(95))} / ${round(during.max())}`],
      ['/ready while down', [...new Set(readyDown.map((x) => `${x.status} ${x.body.status} redis=${x.body.checks?.redis}`))].join(', ')],
      ['Redis back → both report ok (ms)', recoveredAt - upAt],
      ['fallback logged (per process)', fallbackLogs.join(' / ')],
      ['return logged (per process)', backLogs.join(' / ')],
      ['shared counter after recovery (6 requests over 2 processes)', counter],
      ['orders accepted / final', `${accepted.length} / ${accepted.length}`],
    ]);

    assert.equal(all.count5xx() + all.countNet(), 0, `no 5xx and no network error: ${all.statuses()}`);
    assert.ok(during.count > 0, 'requests were served while Redis was down');
    assert.ok(readyDown.length > 0, 'readiness was polled during the outage');
    for (const x of readyDown) {
      assert.equal(x.status, 200, 'Redis is not critical: still ready');
      assert.equal(x.body.status, 'degraded');
      assert.equal(x.body.checks?.redis, 'degraded');
    }
    assert.deepEqual(fallbackLogs, [1, 1], 'the fallback is logged exactly once per process');
    assert.deepEqual(backLogs, [1, 1], 'the return to Redis is logged exactly once per process');
    assert.equal(counter, '6', 'both processes count in Redis again');
  });
});
