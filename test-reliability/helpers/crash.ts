import { createDatabase } from '../../src/db/database.ts';
import { pick, randInt } from './deployment.ts';
import { until } from './infra.ts';
import { Inspector } from './invariants.ts';
import { call, runBounded } from './http.ts';

/** What the crash scenarios share: a load whose acknowledged writes are kept, and what to check after. */

export interface Acknowledged {
  orders: number[];
  items: number[];
  /** answers that were neither a 201 nor a broken connection (there should be none) */
  unexpected: string[];
  /** requests cut off by the kill: never acknowledged, so they may or may not have happened */
  cutOff: number;
}

/**
 * Orders (four in five requests) and items at `concurrency` until `stop()` says so; every 201 is
 * kept in `acked` as it comes. A request the kill cuts off (status 0) was never acknowledged.
 */
export async function placeUntil(
  base: string,
  users: { token: string }[],
  productIds: number[],
  concurrency: number,
  stop: () => boolean,
  acked: Acknowledged,
): Promise<void> {
  await runBounded(concurrency, { maxTasks: 100000, until: stop }, async (i) => {
    const { token } = pick(users);
    const order = i % 5 !== 4;
    const r = order
      ? await call(base, 'POST', '/api/v1/orders', {
          token,
          body: { items: Array.from({ length: randInt(1, 3) }, () => ({ product_id: pick(productIds), quantity: randInt(1, 3) })), shipping_address: `${i} Crash Street` },
          timeoutMs: 10000,
        })
      : await call(base, 'POST', '/api/v1/items', { token, body: { name: `item ${i}`, price: randInt(1, 9999) / 100 }, timeoutMs: 10000 });
    if (r.status === 201) (order ? acked.orders : acked.items).push((r.body as { id: number }).id);
    else if (r.status === 0) acked.cutOff++;
    else acked.unexpected.push(`${r.status} ${JSON.stringify(r.body)}`);
  });
}

/** Products created through the admin API; returns id → initial stock. */
export async function createProducts(base: string, adminToken: string, tag: string, stocks: number[]): Promise<Map<number, number>> {
  const initial = new Map<number, number>();
  for (const [i, stock] of stocks.entries()) {
    const r = await call(base, 'POST', '/api/v1/products', { token: adminToken, body: { sku: `${tag}-${i}`, name: `${tag} product ${i}`, price: 9.99, stock } });
    if (r.status !== 201) throw new Error(`product creation failed: ${r.status} ${JSON.stringify(r.body)}`);
    initial.set((r.body as { id: number }).id, stock);
  }
  return initial;
}

/** How many orders are not final yet, through the admin API (the embedded database has no other door while the service runs). */
export async function unfinishedOrders(base: string, adminToken: string): Promise<number> {
  let n = 0;
  for (const status of ['pending', 'processing']) {
    const r = await call(base, 'GET', `/api/v1/admin/orders?status=${status}&page_size=1`, { token: adminToken });
    if (r.status !== 200) throw new Error(`admin order list: ${r.status} ${JSON.stringify(r.body)}`);
    n += (r.body as { total: number }).total;
  }
  return n;
}

/** Waits until no order is pending or processing; returns when (ms since the epoch). */
export async function waitNoOrderUnfinished(base: string, adminToken: string, timeoutMs: number): Promise<number> {
  await until('every order to be final', async () => ((await unfinishedOrders(base, adminToken)) === 0 ? true : undefined), timeoutMs, 200);
  return Date.now();
}

/**
 * The embedded database of `dataDir`, opened by the test the way the service opens it (its lock
 * included): only once the service has stopped.
 */
export async function inspectEmbedded(dataDir: string): Promise<Inspector> {
  const handle = await createDatabase({ databaseUrl: undefined, dataDir });
  const pglite = handle.pglite;
  if (!pglite) throw new Error('not an embedded database');
  return new Inspector({ query: (text, values) => pglite.query(text, values), close: () => handle.close() });
}

/**
 * What a crash must not break: every acknowledged order and item is there, stock is exact (each
 * completed order's units taken once), each order has one creation and one final transition (no
 * duplicate event), and no order failed because of the kill.
 */
export async function checkNothingLost(inspector: Inspector, acked: Acknowledged, initial: Map<number, number>) {
  const orders = await inspector.query<{ n: number }>('SELECT count(*)::int AS n FROM orders WHERE id = ANY($1::int[])', [acked.orders]);
  const items = await inspector.query<{ n: number }>('SELECT count(*)::int AS n FROM items WHERE id = ANY($1::int[]) AND deleted_at IS NULL', [acked.items]);
  const { reserved } = await inspector.assertStockInvariant(initial);
  const { events } = await inspector.assertOrderEvents();
  const [errors] = await inspector.query<{ n: number }>("SELECT count(*)::int AS n FROM orders WHERE failure_reason = 'PROCESSING_ERROR'");
  const counts = await inspector.statusCounts();
  return { ordersFound: orders[0].n, itemsFound: items[0].n, reserved, events, processingErrors: errors.n, counts };
}
