import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { Deployment, pick, randInt } from './helpers/deployment.ts';
import { until } from './helpers/infra.ts';
import { adminLogin, call, createUsers } from './helpers/http.ts';
import { printTable, round } from './helpers/report.ts';
import type { ServiceProcess } from './helpers/service.ts';

/**
 * Scenario 2 — a worker is SIGKILLed while it is in the middle of processing orders. To catch it
 * there deterministically, the test holds the products' row locks: the worker commits
 * `pending → processing`, then blocks on the products in the reserving transaction. The orders are
 * placed before the worker starts, so its first fetch takes a full batch of them: started first, it
 * would take the first order alone and block on it, and the others would wait behind it. It is
 * killed there, the locks are released, a new worker starts, and every order must still reach a
 * final state with stock reserved exactly once.
 */
const ORDERS = 40;

describe('reliability: worker killed (SIGKILL) mid-processing', () => {
  let d: Deployment;
  let api: ServiceProcess;

  before(async () => {
    d = await Deployment.create({ redis: false });
    [api] = await d.start(d.options('api', {}, 'api-1'));
  });

  after(async () => {
    await d?.destroy();
  });

  it('every order reaches a final state after a new worker starts; stock invariant holds', async () => {
    const admin = await adminLogin(api.baseUrl);
    const [user] = await createUsers(api.baseUrl, admin.access, 1, 'kill');
    const initial = await d.inspector.seedProducts('KILL', [60, 60, 500, 500, 500]);
    const productIds = [...initial.keys()];
    const [queueRow] = await d.inspector.query<{ expire_seconds: number; heartbeat_seconds: number | null; retry_limit: number }>(
      "SELECT expire_seconds, heartbeat_seconds, retry_limit FROM pgboss.queue WHERE name = 'order-process'",
    );

    // hold every product row: processing can start (pending → processing) but not reserve
    const blocker = new pg.Client({ connectionString: d.databaseUrl });
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query('SELECT id FROM products WHERE id = ANY($1::int[]) FOR NO KEY UPDATE', [productIds]);

    const accepted: number[] = [];
    for (let i = 0; i < ORDERS; i++) {
      const items = Array.from({ length: randInt(1, 3) }, () => ({ product_id: pick(productIds), quantity: randInt(1, 5) }));
      const r = await call(api.baseUrl, 'POST', '/api/v1/orders', { token: user.token, body: { items, shipping_address: `${i} Kill Street` } });
      assert.equal(r.status, 201, `order ${i} accepted: ${JSON.stringify(r.body)}`);
      accepted.push((r.body as { id: number }).id);
    }
    const [first] = await d.start(d.options('worker', {}, 'worker-1'));
    const processing = await until(
      'the worker to be stuck in the middle of processing',
      async () => {
        const [row] = await d.inspector.query<{ n: number }>("SELECT count(*)::int AS n FROM orders WHERE status = 'processing'");
        return row.n >= 4 ? row.n : undefined;
      },
      30000,
    );
    const activeBefore = (await d.inspector.jobFigures('order-process')).states.active ?? 0;

    const killedAt = Date.now();
    const killed = await first.kill();
    await blocker.query('ROLLBACK');
    await blocker.end();
    const [stuck] = await d.inspector.query<{ n: number }>("SELECT count(*)::int AS n FROM orders WHERE status IN ('pending', 'processing')");

    await d.start(d.options('worker', {}, 'worker-2'));
    const recoveredInMs = await d.inspector.waitAllFinal(accepted, 300000);
    const totalMs = Date.now() - killedAt;

    const { reserved } = await d.inspector.assertStockInvariant(initial);
    const { events } = await d.inspector.assertOrderEvents(accepted);
    const counts = await d.inspector.statusCounts();
    const jobs = await d.inspector.jobFigures('order-process');
    const [reasons] = await d.inspector.query<{ errors: number }>(
      "SELECT count(*)::int AS errors FROM orders WHERE failure_reason = 'PROCESSING_ERROR'",
    );

    printTable('scenario 2: worker SIGKILLed mid-processing', [
      ['order-process expireInSeconds / heartbeatSeconds / retryLimit', `${queueRow.expire_seconds} / ${queueRow.heartbeat_seconds} / ${queueRow.retry_limit}`],
      ['orders accepted (201)', accepted.length],
      ['orders in processing when killed', processing],
      ['jobs active when killed', activeBefore],
      ['kill signal', String(killed.signal)],
      ['orders not final after the kill', stuck.n],
      ['new worker: all final after (ms)', recoveredInMs],
      ['kill → all final (s)', round(totalMs / 1000, 1)],
      ['completed / failed', `${counts.completed ?? 0} / ${counts.failed ?? 0}`],
      ['failed with PROCESSING_ERROR', reasons.errors],
      ['jobs retried', jobs.retried],
      ['units reserved', reserved],
      ['order events', events],
    ]);
    assert.equal(killed.signal, 'SIGKILL');
    assert.ok(stuck.n >= processing, 'orders were left mid-processing by the kill');
    assert.ok(jobs.retried >= 1, 'the killed jobs were retried');
    assert.equal(reasons.errors, 0, 'a kill is not a processing error: the retry completes the order');
  });
});
