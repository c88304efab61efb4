/**
 * Statements per order: every SQL statement the service sends (each one round trip) from
 * `POST /orders` until the order is `completed`, API and worker together, counted at the pg driver.
 * The service runs in this process (`ROLE=all`, the same statements as the split processes send
 * between them) on a database of its own; `pg.Client.prototype.query` is wrapped for the count, so
 * Kysely's pool, pg-boss's own pool and their LISTEN connections are all seen. What an idle service
 * sends over the same time (pg-boss's polling and supervision) is measured first and subtracted.
 *
 * Standalone: `node bench/statements.ts [orders]` on TEST_DATABASE_URL's server (default local
 * PostgreSQL) prints the count and one order's statements.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import crypto from 'node:crypto';
import pg from 'pg';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { dbUrl, elapsed, log, type RunContext } from './context.ts';
import { f1, type Target } from './report.ts';
import { freshDatabase } from './services.ts';

/**
 * Today's count, a regression guard (not a target): one order placed and processed on its own, with
 * transactions opened where the code shows them and jobs sent through pg-boss's API (decision 001).
 */
const STATEMENTS_GOAL = 14;

export interface StatementCount {
  orders: number;
  /** statements (= round trips) per order, the idle rate subtracted */
  perOrder: number;
  /** statements an idle service sent per second */
  idlePerSecond: number;
  /** the statements of the last order, in the order sent (shortened texts) */
  sample: string[];
}

type Query = (...args: unknown[]) => unknown;

/** Counts the statements every pg.Client of this process sends while `on` (except `ignore`'s). */
function statementTap(ignore: pg.Client): { on: boolean; texts: string[]; restore: () => void } {
  const proto = pg.Client.prototype as unknown as { query: Query };
  const original = proto.query;
  const tap = { on: false, texts: [] as string[], restore: () => (proto.query = original) };
  proto.query = function (this: pg.Client, ...args: unknown[]) {
    if (tap.on && this !== ignore) {
      const text = typeof args[0] === 'string' ? args[0] : String((args[0] as { text?: string } | null)?.text ?? '');
      tap.texts.push(text.replace(/\s+/g, ' ').trim().slice(0, 110));
    }
    return original.apply(this, args);
  } as Query;
  return tap;
}

/** Places `orders` orders one at a time on `databaseUrl` (a fresh, empty database) and counts. */
export async function countStatementsPerOrder(databaseUrl: string, orders = 20): Promise<StatementCount> {
  const config = loadConfig({}, { databaseUrl, role: 'all', logLevel: 'silent', bcryptRounds: 4, seedDemoCatalog: false, dataDir: `/tmp/oas-statements-${process.pid}` });
  const app = await buildApp(config);
  // the poll for the order's status goes through its own client, which the count leaves out
  const watcher = new pg.Client({ connectionString: databaseUrl });
  await watcher.connect();
  const tap = statementTap(watcher);
  try {
    const email = `statements-${crypto.randomUUID()}@bench.example`;
    const password = 'statements-password';
    const { PasswordHasher } = await import('../src/modules/users/passwords.ts');
    const hash = await new PasswordHasher(4).hash(password);
    await watcher.query(`INSERT INTO users (email, full_name, password_hash, is_active, is_admin) VALUES ($1, 'Bench', $2, true, false)`, [email, hash]);
    const { rows } = await watcher.query<{ id: number }>(`INSERT INTO products (sku, name, price, stock) VALUES ($1, 'Bench product', 1.25, 1000000) RETURNING id`, [`SKU-${crypto.randomUUID()}`]);
    const productId = rows[0].id;
    const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username: email, password } });
    const headers = { authorization: `Bearer ${login.json<{ access_token: string }>().access_token}` };

    const placeOne = async (): Promise<void> => {
      const res = await app.inject({ method: 'POST', url: '/api/v1/orders', headers, payload: { items: [{ product_id: productId, quantity: 1 }], shipping_address: '1 Bench Street' } });
      if (res.statusCode !== 201) throw new Error(`POST /orders answered ${res.statusCode}: ${res.body}`);
      const id = res.json<{ id: number }>().id;
      for (;;) {
        const r = await watcher.query<{ status: string }>('SELECT status FROM orders WHERE id = $1', [id]);
        if (r.rows[0]?.status === 'completed') return;
        if (r.rows[0]?.status === 'failed') throw new Error(`order ${id} failed`);
        await sleep(5);
      }
    };
    // warm: prepared statements, pg-boss's queue cache, the user cache
    for (let i = 0; i < 3; i++) await placeOne();
    // the last warm-up order's completion belongs to the warm-up, not to the idle rate
    await sleep(250);

    tap.on = true;
    const idleStart = performance.now();
    await sleep(3000);
    const idleSeconds = (performance.now() - idleStart) / 1000;
    const idle = tap.texts.length;

    tap.texts.length = 0;
    const start = performance.now();
    let before = 0;
    for (let i = 0; i < orders; i++) {
      before = tap.texts.length;
      await placeOne();
    }
    const seconds = (performance.now() - start) / 1000;
    const sample = tap.texts.slice(before);
    const idlePerSecond = idle / idleSeconds;
    return { orders, perOrder: (tap.texts.length - idlePerSecond * seconds) / orders, idlePerSecond, sample };
  } finally {
    tap.on = false;
    tap.restore();
    await watcher.end();
    await app.close();
  }
}

/** The statements phase: the count on a database of its own, as an informative row. */
export async function statementsPhase(ctx: RunContext, report: Record<string, unknown>): Promise<Target> {
  log(`[${elapsed(ctx)}] statements per order (in-process service, ROLE=all)`);
  const name = `${ctx.dbName}_stmts`;
  await (await freshDatabase(ctx, name)).end();
  const r = await countStatementsPerOrder(dbUrl(ctx, name));
  report.statementsPerOrder = r;
  log(`  ${f1(r.perOrder)} statements (round trips) per order; an idle service sent ${f1(r.idlePerSecond)}/s, subtracted`);
  return {
    name: 'statements per order (POST /orders → completed, API + worker)',
    informative: true,
    value: f1(r.perOrder),
    target: `≤ ${STATEMENTS_GOAL}`,
    pass: r.perOrder <= STATEMENTS_GOAL + 0.5,
  };
}

if (import.meta.main) {
  const server = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `oas_statements_${crypto.randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  try {
    const r = await countStatementsPerOrder(url.toString(), Number(process.argv[2] ?? 20));
    console.log(`statements per order: ${r.perOrder.toFixed(1)} (${r.orders} orders; idle ${r.idlePerSecond.toFixed(2)}/s subtracted)`);
    console.log(`one order's statements (${r.sample.length}):\n${r.sample.map((t, i) => `${String(i + 1).padStart(3)} ${t}`).join('\n')}`);
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}
