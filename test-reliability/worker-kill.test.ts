import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { Deployment, pick, randInt } from './helpers/deployment.ts';
import { sleep, until } from './helpers/infra.ts';
import { adminLogin, call, createUsers } from './helpers/http.ts';
import { printTable, round } from './helpers/report.ts';
import type { ServiceProcess } from './helpers/service.ts';

/**
 * Scenario 2 — of two workers on PostgreSQL, one is SIGKILLed in the middle of processing orders;
 * the other, itself in the middle of slow jobs, keeps its own and retries the dead one's. To catch
 * both there deterministically, the test holds the products' row locks: a worker commits
 * `pending → processing`, then blocks on the products in the reserving transaction. The orders are
 * placed before the workers start, so each worker's first fetch takes a full batch: worker-1's, then
 * worker-2's. With the locks still held for longer than a heartbeat and a supervision pass, no job
 * of a live worker is taken from it; then worker-1 is killed and the locks released: its jobs must
 * be back in the queue within 15 s (heartbeat 10 s + supervision every 2 s) and every order final
 * within 20 s, stock reserved exactly once.
 */
const ORDERS = 40;
/** Longer than a heartbeat (10 s) and a supervision pass (2 s), with room for a slow host. */
const LIVE_HOLD_MS = 20000;
const BACK_IN_QUEUE_MS = 15000;
const FINAL_WITHIN_MS = 20000;

describe('reliability: worker killed (SIGKILL) mid-processing, another worker alive', () => {
  let d: Deployment;
  let api: ServiceProcess;

  before(async () => {
    d = await Deployment.create({ redis: false });
    [api] = await d.start(d.options('api', {}, 'api-1'));
  });

  after(async () => {
    await d?.destroy();
  });

  it("a live slow worker keeps its jobs; the dead one's are retried within 15 s and every order is final within 20 s", async () => {
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
    const activeJobs = async () =>
      (await d.inspector.query<{ id: string }>("SELECT id FROM pgboss.job WHERE name = 'order-process' AND state = 'active'")).map((r) => r.id);
    const [first] = await d.start(d.options('worker', {}, 'worker-1'));
    await until('worker-1 to be stuck in the middle of processing', async () => ((await activeJobs()).length >= 4 ? true : undefined), 30000);
    // its whole batch: the rest of it is claimed in the same fetch
    await sleep(1000);
    const doomedIds = await activeJobs();
    await d.start(d.options('worker', {}, 'worker-2'));
    const survivorIds = await until('worker-2 to be stuck too', async () => {
      const ids = (await activeJobs()).filter((id) => !doomedIds.includes(id));
      return ids.length >= 4 ? ids : undefined;
    }, 30000);

    // both workers alive and slow: nobody's jobs are taken from them
    await sleep(LIVE_HOLD_MS);
    const [kept] = await d.inspector.query<{ active: number; taken: number }>(
      `SELECT count(*) FILTER (WHERE state = 'active' AND retry_count = 0)::int AS active,
              count(*) FILTER (WHERE retry_count > 0 OR state IN ('retry', 'failed'))::int AS taken
         FROM pgboss.job WHERE name = 'order-process' AND id = ANY($1::uuid[])`,
      [[...doomedIds, ...survivorIds]],
    );

    const killed = await first.kill();
    const [{ now: killedAt }] = await d.inspector.query<{ now: Date }>('SELECT now()');
    const killedAtMs = Date.now();
    await blocker.query('ROLLBACK');
    await blocker.end();

    // back in the queue: no longer active under the dead worker's claim (a retry starts anew)
    const backMs = await until('the dead worker\'s jobs to be back in the queue', async () => {
      const [row] = await d.inspector.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pgboss.job WHERE id = ANY($1::uuid[]) AND state = 'active' AND started_on < $2",
        [doomedIds, killedAt],
      );
      return row.n === 0 ? Date.now() - killedAtMs : undefined;
    }, 120000, 100);
    const retriedMs = await until("the dead worker's jobs to run again", async () => {
      const [row] = await d.inspector.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM pgboss.job WHERE id = ANY($1::uuid[]) AND retry_count = 0',
        [doomedIds],
      );
      return row.n === 0 ? Date.now() - killedAtMs : undefined;
    }, 120000, 100);
    await d.inspector.waitAllFinal(accepted, 120000);
    const finalMs = Date.now() - killedAtMs;

    const { reserved } = await d.inspector.assertStockInvariant(initial);
    const { events } = await d.inspector.assertOrderEvents(accepted);
    const counts = await d.inspector.statusCounts();
    const [survivors] = await d.inspector.query<{ retried: number }>(
      'SELECT count(*) FILTER (WHERE retry_count > 0)::int AS retried FROM pgboss.job WHERE id = ANY($1::uuid[])',
      [survivorIds],
    );
    const [reasons] = await d.inspector.query<{ errors: number }>(
      "SELECT count(*)::int AS errors FROM orders WHERE failure_reason = 'PROCESSING_ERROR'",
    );

    printTable('scenario 2: a worker SIGKILLed mid-processing, another alive', [
      ['order-process expireInSeconds / heartbeatSeconds / retryLimit', `${queueRow.expire_seconds} / ${queueRow.heartbeat_seconds} / ${queueRow.retry_limit}`],
      ['orders accepted (201)', accepted.length],
      ['jobs stuck on the killed / the live worker', `${doomedIds.length} / ${survivorIds.length}`],
      [`after ${LIVE_HOLD_MS / 1000} s stuck: jobs kept / taken from live workers`, `${kept.active} / ${kept.taken}`],
      ['kill signal', String(killed.signal)],
      ['kill → dead worker\'s jobs back in the queue (s)', round(backMs / 1000, 1)],
      ['kill → all of them running again (s)', round(retriedMs / 1000, 1)],
      ['kill → every order final (s)', round(finalMs / 1000, 1)],
      ['live worker\'s jobs retried', survivors.retried],
      ['completed / failed', `${counts.completed ?? 0} / ${counts.failed ?? 0}`],
      ['failed with PROCESSING_ERROR', reasons.errors],
      ['units reserved', reserved],
      ['order events', events],
    ]);
    assert.equal(killed.signal, 'SIGKILL');
    assert.equal(kept.taken, 0, 'no job of a live worker was failed or retried while it was slow');
    assert.equal(kept.active, doomedIds.length + survivorIds.length, 'every stuck job stayed with its worker');
    assert.equal(survivors.retried, 0, "the live worker's jobs were never run twice");
    assert.equal(reasons.errors, 0, 'a kill is not a processing error: the retry completes the order');
    assert.ok(backMs <= BACK_IN_QUEUE_MS, `the dead worker's jobs were back in the queue ${backMs} ms after the kill (bound ${BACK_IN_QUEUE_MS} ms)`);
    assert.ok(finalMs <= FINAL_WITHIN_MS, `every order final ${finalMs} ms after the kill (bound ${FINAL_WITHIN_MS} ms)`);
  });
});
