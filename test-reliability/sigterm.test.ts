import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { Deployment, pick, randInt } from './helpers/deployment.ts';
import { sleep, until } from './helpers/infra.ts';
import { adminLogin, call, createUsers, login, PASSWORD, runBounded, Stats, type Result } from './helpers/http.ts';
import { printTable, round } from './helpers/report.ts';
import type { ServiceProcess } from './helpers/service.ts';

/**
 * Scenario 6 — SIGTERM under load.
 * a) An API process gets SIGTERM while it holds slow requests (logins with a costly bcrypt hash)
 *    and while a client load runs on both API processes: every request already in flight finishes
 *    with its normal answer, the process exits 0, and a client that fails over to the other process
 *    on a refused connection never sees an error.
 * b) A worker gets SIGTERM while its jobs cannot finish (the products are locked by the test): the
 *    jobs interrupted by the shutdown are retried by another worker and every order ends final.
 */
const SLOW_LOGINS = 24;

describe('reliability: SIGTERM under load', () => {
  let d: Deployment;
  let other: ServiceProcess;

  before(async () => {
    d = await Deployment.create({ redis: false });
  });

  after(async () => {
    await d?.destroy();
  });

  it('API process: in-flight requests finish, the process exits cleanly, clients fail over', async () => {
    // hashes made at cost 11: each login takes long enough to be caught in flight
    let slow: ServiceProcess;
    let worker: ServiceProcess;
    [slow, other, worker] = await d.start(
      // debug logs: its "incoming request" lines show when the slow requests have reached it. A
      // sign-in counts against its e-mail's failure limit until its password has been checked
      // (src/modules/auth/login-throttle.ts), so the concurrent sign-ins of one user need a limit
      // above their number, or all but the first 10 answer 429 LOGIN_THROTTLED
      d.options('api', { BCRYPT_ROUNDS: '11', LOG_LEVEL: 'debug', LOGIN_THROTTLE_MAX_FAILURES: String(SLOW_LOGINS * 2) }, 'api-slow'),
      d.options('api', {}, 'api-other'),
      d.options('worker', {}, 'worker-a'),
    );
    const admin = await adminLogin(other.baseUrl);
    const [user] = await createUsers(slow.baseUrl, admin.access, 1, 'sigterm');
    const initial = await d.inspector.seedProducts('TERM', [100000]);
    const [productId] = [...initial.keys()];

    // a client that knows both instances and retries on the other one when a connection is refused
    // or the instance says it is closing (what a load balancer does)
    const attempts = new Stats();
    const outcomes = new Stats();
    const apis = [slow, other];
    const callWithFailover = async (i: number, method: string, path: string, opts: Parameters<typeof call>[3]): Promise<Result> => {
      let r: Result | undefined;
      for (let attempt = 0; attempt < 4; attempt++) {
        r = await call(apis[(i + attempt) % 2].baseUrl, method, path, opts);
        attempts.add(r);
        const refused = r.status === 0 && (r.error === 'ECONNREFUSED' || r.error === 'UND_ERR_SOCKET' || r.error === 'ECONNRESET');
        if (!refused && r.status !== 503) break;
      }
      return r!;
    };
    let stop = false;
    let n = 0;
    const accepted: number[] = [];
    const load = runBounded(4, { maxTasks: 100000, until: () => stop }, async () => {
      const i = n++;
      const r =
        i % 2 === 0
          ? await callWithFailover(i, 'POST', '/api/v1/orders', { token: user.token, body: { items: [{ product_id: productId, quantity: 1 }], shipping_address: 'Term Terrace' } })
          : await callWithFailover(i, 'GET', '/api/v1/orders?page_size=5', { token: user.token });
      outcomes.add(r);
      if (r.status === 201) accepted.push((r.body as { id: number }).id);
    });
    await sleep(1500);

    const received = () => slow.logLines('incoming request').filter((l) => JSON.stringify(l).includes('/api/v1/auth/login')).length;
    const before = received();
    const slowStarted = Date.now();
    const inFlight = Array.from({ length: SLOW_LOGINS }, () => call(slow.baseUrl, 'POST', '/api/v1/auth/login', { body: { username: user.email, password: PASSWORD } }));
    // in flight = the process has started handling every one of them (not just queued in the kernel)
    await until('the slow logins to reach the server', async () => (received() - before >= SLOW_LOGINS ? true : undefined), 20000, 10);
    const stopped = slow.stop('SIGTERM');
    const logins = await Promise.all(inFlight);
    const loginsMs = Date.now() - slowStarted;
    const exit = await stopped;
    await sleep(1500);
    stop = true;
    await load;
    await d.inspector.waitAllFinal(accepted, 60000);
    const loginStats = new Stats();
    for (const r of logins) loginStats.add(r);

    printTable('scenario 6a: SIGTERM to an API process under load', [
      ['slow logins in flight at SIGTERM', SLOW_LOGINS],
      ['their statuses', loginStats.statuses()],
      ['slowest of them (ms)', round(loginStats.max())],
      ['all logins answered after (ms)', loginsMs],
      ['exit code / signal', `${exit.code} / ${exit.signal}`],
      ['SIGTERM → exit (ms)', exit.ms],
      ['client load: attempts', `${attempts.count} (${attempts.statuses()})`],
      ['client load: outcomes after failover', `${outcomes.count} (${outcomes.statuses()})`],
      ['orders accepted / final', `${accepted.length} / ${accepted.length}`],
    ]);
    assert.equal(loginStats.byStatus.get('200'), SLOW_LOGINS, `every in-flight request finished normally: ${loginStats.statuses()}`);
    assert.equal(exit.code, 0, 'the process exits cleanly');
    assert.equal(outcomes.count5xx() + outcomes.countNet(), 0, `no request failed for the client: ${outcomes.statuses()}`);
    for (const [status] of attempts.byStatus) {
      assert.ok(!/^5/.test(status) || status === '503', `no 5xx other than "closing" 503s: ${attempts.statuses()}`);
    }
    for (const p of [slow, worker]) {
      await p.stop();
      d.processes.delete(p);
      await p.destroy();
    }
  });

  it('worker process: jobs interrupted by the shutdown are retried by another worker', async () => {
    const api = other;
    const [first] = await d.start(d.options('worker', {}, 'worker-1'));
    const admin = await adminLogin(api.baseUrl);
    const [user] = await createUsers(api.baseUrl, admin.access, 1, 'term-worker');
    const token = (await login(api.baseUrl, user.email, PASSWORD)).access;
    const initial = await d.inspector.seedProducts('TERMW', [50, 500, 500]);
    const productIds = [...initial.keys()];

    const blocker = new pg.Client({ connectionString: d.databaseUrl });
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query('SELECT id FROM products WHERE id = ANY($1::int[]) FOR NO KEY UPDATE', [productIds]);
    const accepted: number[] = [];
    for (let i = 0; i < 12; i++) {
      const items = [{ product_id: pick(productIds), quantity: randInt(1, 5) }];
      const r = await call(api.baseUrl, 'POST', '/api/v1/orders', { token, body: { items, shipping_address: 'Worker Way' } });
      assert.equal(r.status, 201);
      accepted.push((r.body as { id: number }).id);
    }
    await until('the worker to be mid-processing', async () => {
      const [row] = await d.inspector.query<{ n: number }>("SELECT count(*)::int AS n FROM orders WHERE status = 'processing'");
      return row.n >= 1 ? true : undefined;
    }, 30000);

    // SIGTERM: the worker waits for its running jobs, which cannot finish while the rows are held
    const termAt = Date.now();
    const exit = await first.stop('SIGTERM', 60000);
    await blocker.query('ROLLBACK');
    await blocker.end();
    const [left] = await d.inspector.query<{ n: number }>("SELECT count(*)::int AS n FROM orders WHERE status IN ('pending', 'processing')");
    await d.start(d.options('worker', {}, 'worker-2'));
    await d.inspector.waitAllFinal(accepted, 300000);
    const totalMs = Date.now() - termAt;
    const { reserved } = await d.inspector.assertStockInvariant(initial);
    await d.inspector.assertOrderEvents(accepted);
    const jobs = await d.inspector.jobFigures('order-process');
    const counts = await d.inspector.statusCounts();
    const [errors] = await d.inspector.query<{ n: number }>("SELECT count(*)::int AS n FROM orders WHERE failure_reason = 'PROCESSING_ERROR'");

    printTable('scenario 6b: SIGTERM to a worker with jobs that cannot finish', [
      ['exit code / signal', `${exit.code} / ${exit.signal}`],
      ['SIGTERM → exit (ms)', exit.ms],
      ['orders not final when it exited', left.n],
      ['SIGTERM → every order final (s)', round(totalMs / 1000, 1)],
      ['jobs retried', jobs.retried],
      ['completed / failed (PROCESSING_ERROR)', `${counts.completed ?? 0} / ${counts.failed ?? 0} (${errors.n})`],
      ['units reserved', reserved],
    ]);
    assert.ok(left.n >= 1, 'the shutdown interrupted processing');
    assert.ok(jobs.retried >= 1, 'the interrupted jobs were retried');
    assert.equal(errors.n, 0);
  });
});
