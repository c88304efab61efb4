import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Deployment, pick, randInt } from './helpers/deployment.ts';
import { sleep, until } from './helpers/infra.ts';
import { adminLogin, call, createUsers, runBounded, Stats, type Result } from './helpers/http.ts';
import { printTable, round } from './helpers/report.ts';
import type { ServiceProcess } from './helpers/service.ts';

/**
 * Scenario 3 — the (private) PostgreSQL server is stopped for a few seconds under load and started
 * again. While it is down /ready is 503 and the API answers 503 quickly (no hang, no crash); the
 * same processes recover by themselves; no order answered with 201 is lost, and a client that
 * retries a 503 with its Idempotency-Key ends up with exactly one order.
 */
const DOWN_MS = 5000;

interface Timed {
  at: number;
  op: string;
  r: Result;
}

describe('reliability: PostgreSQL restarted during load', () => {
  let d: Deployment;
  let apis: ServiceProcess[];

  before(async () => {
    d = await Deployment.create({ redis: false });
    const started = await d.start(d.options('api', {}, 'api-1'), d.options('api', {}, 'api-2'), d.options('worker', {}, 'worker-1'));
    apis = started.filter((p) => p.role === 'api');
  });

  after(async () => {
    await d?.destroy();
  });

  it('503 while down, recovery without restart, no accepted order lost', async () => {
    const admin = await adminLogin(apis[0].baseUrl);
    const users = await createUsers(apis[0].baseUrl, admin.access, 4, 'pgrestart');
    const initial = await d.inspector.seedProducts('PGR', [400, 400, 400, 400]);
    const productIds = [...initial.keys()];
    const pids = [...d.processes].map((p) => p.pid);

    const results: Timed[] = [];
    const ready: { at: number; status: number; body: unknown }[] = [];
    const accepted = new Set<number>();
    const unavailableOrders: { key: string; token: string; body: unknown }[] = [];
    let stopLoad = false;
    let n = 0;

    const readyPoller = (async () => {
      for (let i = 0; i < 600 && !stopLoad; i++) {
        const r = await call(apis[i % 2].baseUrl, 'GET', '/ready', { timeoutMs: 5000 });
        ready.push({ at: Date.now(), status: r.status, body: r.body });
        await sleep(200);
      }
    })();

    const load = runBounded(6, { maxTasks: 100000, until: () => stopLoad }, async () => {
      const i = n++;
      const u = users[i % users.length];
      const base = apis[i % 2].baseUrl;
      const roll = Math.random();
      let op: string;
      let r: Result;
      if (roll < 0.5) {
        op = 'POST /orders';
        const key = `pgr-${i}`;
        const body = { items: [{ product_id: pick(productIds), quantity: randInt(1, 3) }], shipping_address: `${i} Restart Road` };
        r = await call(base, 'POST', '/api/v1/orders', { token: u.token, body, headers: { 'idempotency-key': key }, timeoutMs: 30000 });
        if (r.status === 201) accepted.add((r.body as { id: number }).id);
        if (r.status === 503) unavailableOrders.push({ key, token: u.token, body });
      } else if (roll < 0.8) {
        op = 'GET /orders';
        r = await call(base, 'GET', '/api/v1/orders', { token: u.token, timeoutMs: 30000 });
      } else {
        op = 'GET /auth/me';
        r = await call(base, 'GET', '/api/v1/auth/me', { token: u.token, timeoutMs: 30000 });
      }
      results.push({ at: Date.now(), op, r });
      if (r.status === 503) await sleep(100); // a polite client backs off a little
    });

    await sleep(3000);
    const downAt = Date.now();
    await d.pg.stopServer('fast');
    const stoppedAt = Date.now();
    await sleep(DOWN_MS);
    await d.pg.startServer();
    const upAt = Date.now();
    // recovered: both API processes ready again and serving
    let lastReady: Result[] = [];
    const recoveredAt = await until(
      'both API processes to be ready again',
      async () => {
        lastReady = await Promise.all(apis.map((a) => call(a.baseUrl, 'GET', '/ready', { timeoutMs: 3000 })));
        return lastReady.every((r) => r.status === 200) ? Date.now() : undefined;
      },
      60000,
      200,
    ).catch((err: Error) => {
      const recent = results.slice(-10).map((t) => `${t.op} ${t.r.status} ${t.r.error ?? ''} ${Math.round(t.r.ms)}ms`);
      const logs = [...d.processes].map((p) => `--- ${p.name}\n${p.tail(8).slice(0, 3000)}`);
      throw new Error(`${err.message}\nlast /ready: ${JSON.stringify(lastReady.map((r) => [r.status, r.body, r.error]))}\nrecent: ${recent.join('\n')}\n${logs.join('\n')}`);
    });
    await sleep(4000);
    stopLoad = true;
    await load;
    await readyPoller;

    // a client retries its 503s with the same Idempotency-Key: exactly one order each
    const retried: Result[] = [];
    for (const u of unavailableOrders) {
      const r = await call(apis[0].baseUrl, 'POST', '/api/v1/orders', { token: u.token, body: u.body, headers: { 'idempotency-key': u.key } });
      retried.push(r);
      if (r.status === 201) accepted.add((r.body as { id: number }).id);
    }
    const finalMs = await d.inspector.waitAllFinal(undefined, 120000);

    const all = new Stats();
    const during = new Stats();
    const afterRecovery = new Stats();
    for (const t of results) {
      all.add(t.r);
      if (t.at >= downAt && t.at <= upAt) during.add(t.r);
      if (t.at > recoveredAt + 1000) afterRecovery.add(t.r);
    }
    const readyDown = ready.filter((x) => x.at > stoppedAt + 500 && x.at < upAt);
    const present = await d.inspector.orderStatuses([...accepted]);
    const lost = [...accepted].filter((id) => !present.has(id));
    const { reserved } = await d.inspector.assertStockInvariant(initial);
    await d.inspector.assertOrderEvents();
    const [dupes] = await d.inspector.query<{ orders: number; keys: number }>(
      "SELECT (SELECT count(*)::int FROM orders) AS orders, (SELECT count(*)::int FROM idempotency_keys WHERE key LIKE 'pgr-%') AS keys",
    );
    const errorLogs = [...d.processes].flatMap((p) => p.logLines('"level":50').map((l) => `${p.name}: ${String(l.msg)} ${JSON.stringify(l.err ?? '').slice(0, 300)}`));

    printTable('scenario 3: PostgreSQL stopped (fast) for 5 s under load, then started', [
      ['requests', all.count],
      ['statuses (whole run)', all.statuses()],
      ['statuses while down', during.statuses()],
      ['max latency while down (ms)', round(during.max())],
      ['/ready while down', [...new Set(readyDown.map((x) => x.status))].join(',')],
      ['server back → both ready (ms)', recoveredAt - upAt],
      ['statuses after recovery', afterRecovery.statuses()],
      ['orders accepted (201, incl. retries)', accepted.size],
      ['503 order requests retried with same key', `${unavailableOrders.length} → ${new Stats().statuses() || ''}${retried.filter((r) => r.status === 201).length}×201`],
      ['orders in database / idempotency keys', `${dupes.orders} / ${dupes.keys}`],
      ['lost orders', lost.length],
      ['drain to final (ms)', finalMs],
      ['units reserved', reserved],
      ['process restarts', [...d.processes].filter((p, i) => p.pid !== pids[i]).length],
      ['error log lines (level 50)', errorLogs.length],
    ]);

    assert.ok(readyDown.length > 0 && readyDown.every((x) => x.status === 503), `/ready is 503 while the database is down: ${JSON.stringify(readyDown.slice(0, 3))}`);
    for (const t of results) {
      assert.ok(t.r.status !== 0, `${t.op}: no network error or hang (${t.r.error})`);
      assert.ok(t.r.status < 500 || t.r.status === 503, `${t.op}: ${t.r.status} ${JSON.stringify(t.r.body)}`);
      if (t.r.status === 503) {
        const b = t.r.body as { error_code?: string; detail?: string };
        assert.equal(b.error_code, 'SERVICE_UNAVAILABLE');
        assert.equal(typeof b.detail, 'string');
      }
    }
    assert.ok(during.count5xx() > 0, 'the outage was visible to clients (503)');
    assert.ok(during.max() < 8000, `no request hung while the database was down (max ${round(during.max())} ms)`);
    assert.equal(afterRecovery.count5xx(), 0, 'after recovery every request is served again');
    assert.ok(afterRecovery.count > 0);
    assert.ok(retried.every((r) => r.status === 201), `retried 503s succeed: ${retried.map((r) => r.status).join(',')}`);
    assert.deepEqual(lost, []);
    assert.equal(dupes.orders, dupes.keys, 'one order per Idempotency-Key: no duplicates from retries');
    for (const p of d.processes) assert.ok(p.running, `${p.name} survived the outage`);
    assert.deepEqual([...d.processes].map((p) => p.pid), pids, 'no process was restarted');
  });
});
