import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Deployment, pick, platformOrder, randInt, sendInbound } from './helpers/deployment.ts';
import { adminLogin, call, createUsers, PASSWORD, runBounded, Stats, type Result } from './helpers/http.ts';
import { printTable, round, type Figures } from './helpers/report.ts';
import type { ServiceProcess } from './helpers/service.ts';

/**
 * Scenario 1 — soak: two API processes and two worker processes on one PostgreSQL and one Redis,
 * mixed load with bounded concurrency for RELIABILITY_SOAK_SECONDS (default 120).
 */
const SOAK_SECONDS = Number(process.env.RELIABILITY_SOAK_SECONDS ?? 120);
const CONCURRENCY = Number(process.env.RELIABILITY_SOAK_CONCURRENCY ?? 8);
const USERS = 8;
const RATE_LIMIT = 30;

describe('reliability: soak on two API and two worker processes', () => {
  let d: Deployment;
  let apis: ServiceProcess[];

  before(async () => {
    d = await Deployment.create({ redis: true });
    apis = await d.startTwoApisTwoWorkers();
  });

  after(async () => {
    await d?.destroy();
  });

  it('rate limits are global: 40 requests of one user spread over two API processes → exactly the limit succeed', async () => {
    const limited = await d.start(
      d.options('api', { RATE_LIMIT_AUTHENTICATED: String(RATE_LIMIT), RATE_LIMIT_KEY_PREFIX: 'oas:rl:soak-limit' }, 'api-limit-1'),
      d.options('api', { RATE_LIMIT_AUTHENTICATED: String(RATE_LIMIT), RATE_LIMIT_KEY_PREFIX: 'oas:rl:soak-limit' }, 'api-limit-2'),
    );
    try {
      const admin = await adminLogin(apis[0].baseUrl);
      const [user] = await createUsers(apis[0].baseUrl, admin.access, 1, 'ratelimit');
      const results: Result[] = [];
      await runBounded(4, { maxTasks: 40 }, async (i) => {
        results.push(await call(limited[i % 2].baseUrl, 'GET', '/api/v1/auth/me', { token: user.token }));
      });
      const ok = results.filter((r) => r.status === 200).length;
      const limitedCount = results.filter((r) => r.status === 429).length;
      const perProcess = limited.map((p, i) => results.filter((r, j) => j % 2 === i).length);
      printTable('scenario 1a: global rate limit (two API processes, one Redis)', [
        ['limit per user per window', RATE_LIMIT],
        ['requests sent (alternating processes)', results.length],
        ['requests per process', perProcess.join(' / ')],
        ['200 OK', ok],
        ['429 Too Many Requests', limitedCount],
        ['other', results.length - ok - limitedCount],
      ]);
      assert.equal(ok, RATE_LIMIT, `exactly ${RATE_LIMIT} requests succeed across both processes`);
      assert.equal(limitedCount, 40 - RATE_LIMIT);
      for (const r of results.filter((x) => x.status === 429)) {
        assert.equal((r.body as { error_code: string }).error_code, 'RATE_LIMITED');
      }
    } finally {
      for (const p of limited) {
        await p.stop();
        d.processes.delete(p);
        await p.destroy();
      }
    }
  });

  it(`mixed load for ${SOAK_SECONDS} s, cancellations included: no 5xx, no lost order, stock reserved and released exactly once`, async () => {
    const base = () => pick(apis).baseUrl;
    const admin = await adminLogin(apis[0].baseUrl);
    const users = await createUsers(apis[0].baseUrl, admin.access, USERS, 'soak');
    // stock tight enough that some orders fail for stock: reservation under contention is exercised
    const stocks = Array.from({ length: 10 }, (_, i) => (i < 3 ? 150 : 5000));
    const initial = await d.inspector.seedProducts('SOAK', stocks);
    const productIds = [...initial.keys()];
    const skus = stocks.map((_, i) => `SOAK-${i}`);

    const stats = new Stats();
    const perOp = new Map<string, Stats>();
    const accepted = new Set<number>();
    const idempotentMismatches: string[] = [];
    const fiveXX: string[] = [];
    let webhooksAccepted = 0;
    let externalId = 1_000_000;
    const userItems = new Map<number, number[]>();
    const cancelAnswers = new Map<number, number>();
    let platformCancellations = 0;

    const record = (op: string, r: Result) => {
      stats.add(r);
      if (!perOp.has(op)) perOp.set(op, new Stats());
      perOp.get(op)!.add(r);
      if (r.status >= 500 || r.status === 0) fiveXX.push(`${op}: ${r.status} ${r.error ?? ''} ${JSON.stringify(r.body)}`.slice(0, 300));
    };

    const ops: [number, (lane: number) => Promise<void>][] = [
      [30, async (lane) => {
        const u = users[lane % USERS];
        const lines = Array.from({ length: randInt(1, 3) }, () => ({ product_id: pick(productIds), quantity: randInt(1, 4) }));
        const key = Math.random() < 0.15 ? `soak-${lane}-${Math.random().toString(36).slice(2)}` : undefined;
        const body = { items: lines, shipping_address: `${lane} Soak Street` };
        const headers: Record<string, string> = key ? { 'idempotency-key': key } : {};
        const r = await call(base(), 'POST', '/api/v1/orders', { token: u.token, body, headers });
        record('POST /orders', r);
        if (r.status === 201) accepted.add((r.body as { id: number }).id);
        if (key && r.status === 201) {
          // the same request again, on either process: the same order, not a second one
          const again = await call(base(), 'POST', '/api/v1/orders', { token: u.token, body, headers });
          record('POST /orders (replay)', again);
          const a = (r.body as { id: number }).id;
          const b = (again.body as { id?: number } | undefined)?.id;
          if (again.status !== 201 || a !== b) idempotentMismatches.push(`${key}: ${a} vs ${again.status} ${b}`);
        }
      }],
      [12, async (lane) => {
        const u = users[lane % USERS];
        const r = await call(base(), 'GET', `/api/v1/orders?page=1&page_size=${randInt(1, 50)}`, { token: u.token });
        record('GET /orders', r);
        const first = (r.body as { items?: { id: number }[] } | undefined)?.items?.[0];
        if (first) record('GET /orders/{id}', await call(base(), 'GET', `/api/v1/orders/${first.id}`, { token: u.token }));
      }],
      [18, async (lane) => {
        const u = users[lane % USERS];
        const mine = userItems.get(u.id) ?? [];
        userItems.set(u.id, mine);
        const roll = Math.random();
        if (mine.length === 0 || roll < 0.4) {
          const r = await call(base(), 'POST', '/api/v1/items', { token: u.token, body: { name: `item ${lane}`, price: randInt(1, 9999) / 100 } });
          record('POST /items', r);
          if (r.status === 201) mine.push((r.body as { id: number }).id);
        } else if (roll < 0.6) {
          record('PATCH /items/{id}', await call(base(), 'PATCH', `/api/v1/items/${pick(mine)}`, { token: u.token, body: { description: `at ${Date.now()}` } }));
        } else if (roll < 0.8) {
          record('GET /items', await call(base(), 'GET', '/api/v1/items?limit=20', { token: u.token }));
        } else {
          const id = mine.splice(randInt(0, mine.length - 1), 1)[0];
          record('DELETE /items/{id}', await call(base(), 'DELETE', `/api/v1/items/${id}`, { token: u.token }));
        }
      }],
      [10, async (lane) => {
        const u = users[lane % USERS];
        const r = await call(base(), 'POST', '/api/v1/auth/login', { body: { username: u.email, password: PASSWORD } });
        record('POST /auth/login', r);
        const refresh = (r.body as { refresh_token?: string } | undefined)?.refresh_token;
        if (refresh) record('POST /auth/refresh', await call(base(), 'POST', '/api/v1/auth/refresh', { body: { refresh_token: refresh } }));
        record('GET /auth/me', await call(base(), 'GET', '/api/v1/auth/me', { token: u.token }));
      }],
      [10, async () => {
        const id = ++externalId;
        const lines = Array.from({ length: randInt(1, 2) }, () => ({ sku: pick(skus), quantity: randInt(1, 3) }));
        const body = platformOrder(id, lines, `platform-${id % 50}@example.com`);
        const r = await sendInbound(base(), body, `soak-wh-${id}`);
        record('POST /webhooks/orders/create', r);
        if (r.status === 200) webhooksAccepted++;
        if (Math.random() < 0.2) {
          // the platform retries a delivery: acknowledged, not processed again
          const again = await sendInbound(base(), body, `soak-wh-${id}`);
          record('POST /webhooks/orders/create (repeat)', again);
        }
      }],
      [8, async (lane) => {
        // an owner cancels one of their recent orders (v2), whatever its processing is doing
        const u = users[lane % USERS];
        const list = await call(base(), 'GET', `/api/v2/orders?page=1&page_size=${randInt(1, 10)}`, { token: u.token });
        record('GET /v2/orders', list);
        const items = (list.body as { items?: { id: number }[] } | undefined)?.items ?? [];
        if (items.length === 0) return;
        const r = await call(base(), 'POST', `/api/v2/orders/${pick(items).id}/cancel`, { token: u.token, body: { reason: `soak ${lane}` } });
        record('POST /v2/orders/{id}/cancel', r);
        cancelAnswers.set(r.status, (cancelAnswers.get(r.status) ?? 0) + 1);
        if (r.status !== 200 && !(r.status === 400 && (r.body as { error_code?: string }).error_code === 'ORDER_NOT_CANCELLABLE')) {
          fiveXX.push(`cancel: unexpected ${r.status} ${JSON.stringify(r.body)}`.slice(0, 300));
        }
      }],
      [3, async () => {
        // the platform cancels one of its orders: one already sent, or (now and then) one it sends next
        const id = Math.random() < 0.3 ? externalId + 1 : externalId - randInt(0, 20);
        const r = await sendInbound(base(), JSON.stringify({ id, cancel_reason: 'customer' }), `soak-cancel-${id}`, { topic: 'orders/cancelled' });
        record('POST /webhooks/orders/cancelled', r);
        if (r.status === 200) platformCancellations++;
      }],
      [5, async (lane) => {
        record('GET /products', await call(base(), 'GET', '/api/v1/products', { token: users[lane % USERS].token }));
      }],
    ];
    const totalWeight = ops.reduce((s, [w]) => s + w, 0);
    const chooseOp = () => {
      let roll = Math.random() * totalWeight;
      for (const [w, op] of ops) {
        roll -= w;
        if (roll < 0) return op;
      }
      return ops[0][1];
    };

    const started = Date.now();
    const deadline = started + SOAK_SECONDS * 1000;
    let lane = 0;
    await runBounded(CONCURRENCY, { maxTasks: 10_000_000, until: () => Date.now() >= deadline }, async () => {
      await chooseOp()(lane++);
    });
    const loadSeconds = (Date.now() - started) / 1000;

    // every inbound webhook became an order (or a recorded failure) and every order is final
    const drainStarted = Date.now();
    await d.inspector.waitInboundSettled(120000);
    const [inbound] = await d.inspector.query<{ received: number; processed: number; failed: number }>(
      `SELECT count(*) FILTER (WHERE status = 'received')::int AS received, count(*) FILTER (WHERE status = 'processed')::int AS processed,
              count(*) FILTER (WHERE status = 'failed')::int AS failed FROM inbound_webhooks`,
    );
    await d.inspector.waitAllFinal(undefined, 120000);
    const drainMs = Date.now() - drainStarted;

    const present = await d.inspector.orderStatuses([...accepted]);
    const lost = [...accepted].filter((id) => !present.has(id));
    const counts = await d.inspector.statusCounts();
    const { reserved } = await d.inspector.assertStockInvariant(initial);
    const { events } = await d.inspector.assertOrderEvents();
    const jobs = await d.inspector.jobFigures('order-process');

    const figures: Figures = [
      ['duration (s)', round(loadSeconds, 1)],
      ['concurrency', CONCURRENCY],
      ['requests', stats.count],
      ['throughput (req/s)', round(stats.count / loadSeconds, 1)],
      ['statuses', stats.statuses()],
      ['latency p50 / p95 / p99 / max (ms)', `${round(stats.percentile(50))} / ${round(stats.percentile(95))} / ${round(stats.percentile(99))} / ${round(stats.max())}`],
      ['orders accepted via API (201)', accepted.size],
      ['inbound webhooks acknowledged (200)', webhooksAccepted],
      ['inbound processed / failed / left', `${inbound.processed} / ${inbound.failed} / ${inbound.received}`],
      ['orders completed / failed / cancelled / other', `${counts.completed ?? 0} / ${counts.failed ?? 0} / ${counts.cancelled ?? 0} / ${(counts.pending ?? 0) + (counts.processing ?? 0)}`],
      ['cancel answers (API)', JSON.stringify(Object.fromEntries(cancelAnswers))],
      ['platform cancellations acknowledged', platformCancellations],
      ['units reserved', reserved],
      ['order events', events],
      ['order jobs by state', JSON.stringify(jobs.states)],
      ['drain after load (ms)', drainMs],
      ['lost orders', lost.length],
      ['idempotency mismatches', idempotentMismatches.length],
      ['5xx / network errors', `${stats.count5xx()} / ${stats.countNet()}`],
    ];
    for (const [op, s] of [...perOp.entries()].sort()) {
      figures.push([`  ${op} p95 ms (${s.count})`, `${round(s.percentile(95))} [${s.statuses()}]`]);
    }
    printTable(`scenario 1b: soak, 2 API + 2 worker processes, ${SOAK_SECONDS} s`, figures);

    const errors = [...d.processes].flatMap((p) => p.logLines('"level":50').map((l) => `${p.name}: ${JSON.stringify(l).slice(0, 1500)}`));
    assert.deepEqual(fiveXX.slice(0, 10), [], `no 5xx and no network error under load; error logs:\n${errors.slice(0, 5).join('\n')}`);
    assert.deepEqual(lost, [], 'every order accepted with 201 exists');
    assert.deepEqual(idempotentMismatches, [], 'an Idempotency-Key replay returns the same order');
    assert.equal(inbound.received, 0, 'every acknowledged webhook was processed');
    assert.ok(accepted.size > 0 && webhooksAccepted > 0, 'the load placed orders through both channels');
    assert.ok((counts.cancelled ?? 0) > 0, 'the load cancelled orders');
    for (const p of d.processes) assert.ok(p.running, `${p.name} is still running`);
  });
});
