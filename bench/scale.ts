/**
 * The scale phase: GET /orders, GET /users and the administrators' GET /admin/orders at `scaleSmall`
 * rows, then at `scaleLarge`, on a database and a service of their own; the main queries timed idle
 * and their plans at each size.
 */
import bcrypt from 'bcrypt';
import type pg from 'pg';
import { dbUrl, elapsed, log } from './context.ts';
import { explain, sampleQueries } from './measure.ts';
import { LOGGED_IN, PASSWORD, PRODUCTS } from './options.ts';
import { f1, failures, summaryLine, table } from './report.ts';
import type { Bench } from './scenario.ts';
import { growOrders, growUsers, seed, vacuumAnalyze } from './seed.ts';
import { freshDatabase, startService, stopService } from './services.ts';
import { orderIdsOf, sessions, type Session } from './sessions.ts';
import { summarise } from './stats.ts';
import type { LoadResult, Pattern } from './types.ts';

/** Runs the scale phase; its targets go to `b.targets`, and it returns the report's `scale` section. */
export async function scalePhase(b: Bench): Promise<Record<string, unknown>> {
  const { ctx, targets } = b;
  const { scaleSmall, scaleLarge } = ctx.opts;
  const name = `${ctx.dbName}_scale`;
  log(`\n[${elapsed(ctx)}] scale: ${scaleSmall.toLocaleString('en-US')} → ${scaleLarge.toLocaleString('en-US')} orders and users (${name})`);
  const client = await freshDatabase(ctx, name);
  const customers = 1000;
  const passwordHash = await bcrypt.hash(PASSWORD, 10);
  await seed(client, { users: scaleSmall, customers, products: PRODUCTS, orders: scaleSmall, itemsPerCustomer: 0, passwordHash });
  const service = await startService(ctx, 'service-scale', name);
  const out: Record<string, unknown> = { customers, note: 'orders belong to the first 1,000 users: 10 per user at the small size, up to 1,000 at the large one' };
  try {
    const users = await sessions(ctx, client, LOGGED_IN, customers);
    // the first session's user reads the order console too (the flag is read on every request)
    await client.query('UPDATE users SET is_admin = true WHERE id = $1', [users[0].userId]);
    log(`[${elapsed(ctx)}] scale @ ${scaleSmall.toLocaleString('en-US')}`);
    const small = await measure(b, client, users, scaleSmall);
    const tGrow = Date.now();
    await growOrders(client, scaleLarge, customers, PRODUCTS);
    await growUsers(client, scaleLarge, passwordHash);
    await vacuumAnalyze(client);
    out.growSeconds = (Date.now() - tGrow) / 1000;
    log(`  grown in ${f1(out.growSeconds as number)} s`);
    for (const u of users) u.orderIds = await orderIdsOf(client, u.userId);
    log(`[${elapsed(ctx)}] scale @ ${scaleLarge.toLocaleString('en-US')}`);
    const large = await measure(b, client, users, scaleLarge);
    const queries = await sampleQueries(dbUrl(ctx, name), users, { iterations: 200 });
    log(`  DB queries @ ${scaleLarge.toLocaleString('en-US')} (idle, sequential): ${summaryLine(queries.overall)}`);
    log(
      table(
        ['query', 'p50 ms', 'p95 ms', 'p99 ms'],
        Object.entries(queries.perQuery).map(([n, q]) => [n, q.p50.toFixed(2), q.p95.toFixed(2), q.p99.toFixed(2)]),
      ),
    );
    Object.assign(out, { small, large, queriesAtLarge: queries });
    const o10 = small.results['GET /orders'].latency.p95;
    const o1m = large.results['GET /orders'].latency.p95;
    const u10 = small.results['GET /users'].latency.p95;
    const u1m = large.results['GET /users'].latency.p95;
    const a10 = small.results['GET /admin/orders'].latency.p95;
    const a1m = large.results['GET /admin/orders'].latency.p95;
    const label = scaleLarge >= 1_000_000 ? `${scaleLarge / 1_000_000}M` : `${scaleLarge / 1000}k`;
    // the all-users count is reported on its own (GET /users row below): it is linear in the users table
    const orderQueries = summarise(
      Object.entries(queries.perQuery)
        .filter(([n]) => n !== 'users count')
        .flatMap(([n]) => queries.samples[n]),
    );
    targets.push({
      name: `DB query p95 @ ${label} orders (all but the users count)`,
      value: `${orderQueries.p95.toFixed(2)} ms`,
      target: '< 5 ms',
      pass: orderQueries.p95 < 5,
    });
    targets.push({
      name: `users count query p95 @ ${label} users`,
      informative: true,
      value: `${queries.perQuery['users count'].p95.toFixed(2)} ms`,
      target: '< 5 ms',
      pass: queries.perQuery['users count'].p95 < 5,
    });
    targets.push({ name: `GET /orders p95 @ ${label} vs @ 10k`, value: `${f1(o1m)} vs ${f1(o10)} ms (${(o1m / o10).toFixed(2)}×)`, target: '≤ 2×', pass: o1m <= 2 * o10 });
    targets.push({ name: `GET /users p95 @ ${label} vs @ 10k`, informative: true, value: `${f1(u1m)} vs ${f1(u10)} ms (${(u1m / u10).toFixed(2)}×)`, target: '≤ 2×', pass: u1m <= 2 * u10 });
    targets.push({
      name: `GET /admin/orders p95 @ ${label} vs @ 10k (pages 1–5, by status, by user)`,
      value: `${f1(a1m)} vs ${f1(a10)} ms (${(a1m / a10).toFixed(2)}×)`,
      target: '≤ 2×',
      pass: a1m <= 2 * a10,
    });
  } finally {
    await stopService(ctx, service);
    await client.end();
  }
  return out;
}

interface SizeResults {
  results: Record<string, LoadResult>;
  plans: Record<string, { plan: string; ms: number }>;
}

/** GET /orders, GET /users and GET /admin/orders at the database's current size, then the plans of their queries. */
async function measure(b: Bench, client: pg.Client, users: Session[], size: number): Promise<SizeResults> {
  const { ctx } = b;
  const admin = users[0];
  const patterns: Record<string, Pattern> = {
    'GET /orders': { kind: 'get', entries: users.map((u) => ({ token: u.token, paths: ['/api/v1/orders?page=1&page_size=20'] })) },
    // every user's orders: the newest pages, the failed ones (2 %), one customer's
    'GET /admin/orders': {
      kind: 'get',
      entries: [
        {
          token: admin.token,
          paths: [
            ...[1, 2, 3, 4, 5].map((p) => `/api/v1/admin/orders?page=${p}&page_size=20`),
            '/api/v1/admin/orders?status=failed&page=1&page_size=20',
            '/api/v1/admin/orders?status=completed&page=2&page_size=20',
            ...users.slice(1, 11).map((u) => `/api/v1/admin/orders?user_id=${u.userId}&page_size=20`),
          ],
        },
      ],
    },
    'GET /users': {
      kind: 'get',
      entries: users.map((u) => ({ token: u.token, paths: [1, 2, 3, 4, 5].map((p) => `/api/v1/users?page=${p}&page_size=20`) })),
    },
  };
  const res: Record<string, LoadResult> = {};
  for (const [n, p] of Object.entries(patterns)) {
    const { connections, scaleDuration } = ctx.opts;
    res[n] = await b.loader.run([{ name: `${n} @${size}`, url: ctx.serviceUrl, connections, durationSec: scaleDuration, warmupSec: 1, pattern: p }]).then((r) => r[0]);
    log(`  ${n} @ ${size.toLocaleString('en-US')}: ${Math.round(res[n].okRps)} req/s ${summaryLine(res[n].latency)} ${failures(res[n])}`);
  }
  const who = users[0];
  const plans = {
    ordersCount: await explain(client, 'SELECT coalesce(sum(total), 0) FROM user_order_counts WHERE user_id = $1', [who.userId]),
    ordersPage: await explain(client, 'SELECT * FROM orders WHERE user_id = $1 ORDER BY created_at DESC, id DESC LIMIT 20', [who.userId]),
    usersCount: await explain(client, 'SELECT coalesce(sum(total), 0) FROM user_counts', []),
    usersPage: await explain(client, 'SELECT * FROM users WHERE deleted_at IS NULL ORDER BY id LIMIT 20 OFFSET 80', []),
    adminOrdersCount: await explain(client, 'SELECT coalesce(sum(total), 0) FROM order_counts', []),
    adminOrdersPage: await explain(client, 'SELECT * FROM orders ORDER BY created_at DESC, id DESC LIMIT 20 OFFSET 80', []),
    adminFailedPage: await explain(client, "SELECT * FROM orders WHERE status = 'failed' ORDER BY created_at DESC, id DESC LIMIT 20", []),
  };
  for (const [n, e] of Object.entries(plans)) log(`    EXPLAIN ${n}: ${e.ms.toFixed(2)} ms — ${e.plan}`);
  return { results: res, plans };
}
