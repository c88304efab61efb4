import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { buildConsole } from '../../scripts/build-console.ts';
import { waitFor } from '../helpers/app.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, freePort, serverEnv, start, untilHealthy } from '../helpers/server-process.ts';
import { openEvents, orderEvents } from '../helpers/sse.ts';
import { assertAccessible, assertNoTrouble, launchBrowser, newConsolePage, signIn, skipWithoutChromium } from './console.helpers.ts';

/** How soon a change a worker made shows on the API process's stream and console page (the 2 s). */
const LIVE_MS = 2000;

describe('live updates across processes (PostgreSQL): a ROLE=worker process changes, a ROLE=api process streams', {
  skip: (!process.env.TEST_DATABASE_URL && 'needs TEST_DATABASE_URL') || skipWithoutChromium,
  timeout: 300000,
}, () => {
  it('an order the worker processes shows its events on the API process\'s stream, and its final status on the console\'s order page and Orders list without a reload, within 2 s; a new order joins the list', async (t) => {
    // the console as `npm ci` builds it into build/console, from this checkout's sources, which the processes serve
    await buildConsole();
    const apiPort = await freePort();
    const base = `http://127.0.0.1:${apiPort}`;
    const apiEnv = await serverEnv(t, { PORT: String(apiPort), ROLE: 'api', BCRYPT_ROUNDS: '4' });
    const apiProc = start(t, 'src/server.ts', apiEnv);
    await untilHealthy(base, apiProc);

    const call = async <T>(method: string, path: string, token: string | undefined, body?: unknown): Promise<T> => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      assert.ok(res.ok, `${method} ${path}: ${res.status} ${await res.clone().text()}`);
      return (await res.json()) as T;
    };
    const { access_token: token } = await call<{ access_token: string }>('POST', '/api/v2/auth/login', undefined, { username: ADMIN_EMAIL, password: ADMIN_PASSWORD });
    const product = await call<{ id: number }>('POST', '/api/v2/products', token, { name: 'Live lamp', sku: 'LIVE-1', price: 12.5, stock: 10 });
    // no worker yet: the order waits, pending, while the page and the stream open
    const order = await call<{ id: number }>('POST', '/api/v2/orders', token, { items: [{ product_id: product.id, quantity: 1 }], shipping_address: '1 Live Street' });

    const stream = await openEvents(base, token);
    assert.equal(stream.status, 200);
    t.after(() => stream.close());
    const browser = await launchBrowser();
    const { page, trouble } = await newConsolePage(browser, base);
    await signIn(page, base, ADMIN_EMAIL, ADMIN_PASSWORD);
    // the Orders list in a second tab (signed in on its own: the session is the tab's), the order page in the first
    const list = await page.context().newPage();
    await signIn(list, base, ADMIN_EMAIL, ADMIN_PASSWORD);
    await list.goto(`${base}/console/orders`);
    const rowOf = (id: number) => list.getByRole('table', { name: 'Orders' }).getByRole('row').filter({ has: list.getByRole('link', { name: `Order ${id}`, exact: true }) });
    await rowOf(order.id).getByText('pending').waitFor();
    await page.goto(`${base}/console/orders/${order.id}`);
    const status = page.getByRole('status', { name: 'Order status' });
    await status.getByText('pending').waitFor();

    const workerEnv = await serverEnv(t, { ROLE: 'worker', BCRYPT_ROUNDS: '4', PORT: String(await freePort()) });
    workerEnv.DATABASE_URL = apiEnv.DATABASE_URL;
    const worker = start(t, 'src/server.ts', workerEnv);

    // the clock starts when the worker's final change is committed (seen in the database)
    const db = new pg.Client({ connectionString: apiEnv.DATABASE_URL });
    await db.connect();
    db.on('error', () => {});
    t.after(() => db.end());
    await waitFor(async () => {
      if (worker.child.exitCode !== null) throw new Error(`worker exited: ${worker.stderr()}`);
      const { rows } = await db.query<{ status: string }>('SELECT status FROM orders WHERE id = $1', [order.id]);
      return rows[0]?.status === 'completed' ? true : undefined;
    }, 120_000, 20);
    const committed = Date.now();

    const events = await stream.until((frames) => {
      const mine = orderEvents(frames, order.id);
      return mine.some((e) => e.order.status === 'completed') && mine.length >= 2 ? mine : undefined;
    }, LIVE_MS);
    const streamed = Date.now() - committed;
    // the stream began after the placement: its processing and completion (Last-Event-ID would send the creation)
    assert.ok(events.every((e) => e.event === 'order.status_changed'), JSON.stringify(events.map((e) => e.event)));
    assert.equal(events.at(-1)?.order.status, 'completed');

    const untilLiveDeadline = () => Math.max(100, committed + LIVE_MS - Date.now());
    await status.getByText('completed').waitFor({ timeout: untilLiveDeadline() });
    const shown = Date.now() - committed;
    await rowOf(order.id).getByText('completed').waitFor({ timeout: untilLiveDeadline() });
    const listed = Date.now() - committed;
    // a new order, placed on the API process and completed by the worker, joins the list without a reload
    const placedAt = Date.now();
    const next = await call<{ id: number }>('POST', '/api/v2/orders', token, { items: [{ product_id: product.id, quantity: 1 }], shipping_address: '2 Live Street' });
    await rowOf(next.id).waitFor({ timeout: LIVE_MS });
    const joined = Date.now() - placedAt;
    t.diagnostic(`after the commit: on the stream in ${streamed} ms, on the order page in ${shown} ms, in the list in ${listed} ms; a new order listed ${joined} ms after its POST was sent`);
    await assertAccessible(page, 'the order page, updated live');
    await assertAccessible(list, 'the Orders list, updated live');
    assertNoTrouble(trouble);

    // SIGTERM with two streams open (this test's and the page's): they end, and the process exits
    // as after any graceful shutdown, not when closeWithGrace's 30 s run out
    const stopping = Date.now();
    apiProc.child.kill('SIGTERM');
    const exit = await apiProc.exited;
    assert.equal(exit.code, 0, apiProc.stderr());
    await stream.until(() => (stream.ended() ? true : undefined));
    assert.ok(Date.now() - stopping < 10_000, `the API process took ${Date.now() - stopping} ms to stop`);
  });
});
