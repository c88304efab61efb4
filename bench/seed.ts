/**
 * The seeding phase, and the seeding the scale phase grows its database with. Set-based
 * (INSERT … SELECT generate_series) in chunks, so a progress bar can follow it and no statement runs
 * for long. Everything is derived from the row number: the same flags give the same data set.
 */
import bcrypt from 'bcrypt';
import cliProgress from 'cli-progress';
import type pg from 'pg';
import { elapsed, log, type RunContext } from './context.ts';
import { f1 } from './report.ts';
import { PASSWORD, PRODUCTS } from './options.ts';
import { freshDatabase } from './services.ts';

const CHUNK = 50_000;

export interface SeedPlan {
  users: number;
  /** the first `customers` users own the orders and items */
  customers: number;
  products: number;
  orders: number;
  itemsPerCustomer: number;
  passwordHash: string;
}

/**
 * The seeding phase: the main bench database, created, migrated and filled (`--users` users who all
 * own orders and 30 items each); returns a client connected to it.
 */
export async function seedPhase(ctx: RunContext, report: Record<string, unknown>): Promise<pg.Client> {
  const passwordHash = await bcrypt.hash(PASSWORD, 10);
  log(`\n[${elapsed(ctx)}] seeding ${ctx.dbName}`);
  const client = await freshDatabase(ctx, ctx.dbName);
  const tSeed = Date.now();
  const { users, orders } = ctx.opts;
  try {
    await seed(client, { users, customers: users, products: PRODUCTS, orders, itemsPerCustomer: 30, passwordHash });
  } catch (err) {
    // the clean-up drops the database: a connection left open would end with an unhandled error
    await client.end();
    throw err;
  }
  report.seedSeconds = (Date.now() - tSeed) / 1000;
  const pgVersion = (await client.query<{ server_version: string }>('SHOW server_version')).rows[0].server_version;
  (report.machine as Record<string, unknown>).postgres = pgVersion;
  log(`  seeded in ${f1(report.seedSeconds as number)} s (PostgreSQL ${pgVersion})`);
  return client;
}

export const emailOf = (n: number): string => `user${n}@bench.example`;
export const skuOf = (n: number): string => `BENCH-SKU-${n}`;

interface Step {
  rows: number;
  run: (from: number, to: number) => Promise<void>;
}

async function runSteps(label: string, steps: Step[]): Promise<void> {
  const total = steps.reduce((s, st) => s + st.rows, 0);
  if (total === 0) return;
  const bar = new cliProgress.SingleBar(
    { format: `  ${label.padEnd(14)} [{bar}] {percentage}% | {value}/{total} rows | {duration}s`, hideCursor: true },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, 0);
  let done = 0;
  try {
    for (const step of steps) {
      for (let from = 1; from <= step.rows; from += CHUNK) {
        const to = Math.min(step.rows, from + CHUNK - 1);
        await step.run(from, to);
        done += to - from + 1;
        bar.update(done);
      }
    }
  } finally {
    bar.stop();
  }
}

async function maxId(client: pg.ClientBase, table: string): Promise<number> {
  const { rows } = await client.query<{ m: number | null }>(`SELECT max(id) AS m FROM ${table}`);
  return Number(rows[0].m ?? 0);
}

/** Users numbered `from`..`to` (e-mail userN@bench.example), all with the same password hash. */
export function usersStep(start: number, count: number, passwordHash: string, client: pg.ClientBase): Step {
  return {
    rows: count,
    run: async (from, to) => {
      await client.query(
        `INSERT INTO users (email, full_name, password_hash, created_at)
         SELECT 'user' || g || '@bench.example', 'Bench User ' || g, $1, now() - (g || ' seconds')::interval
         FROM generate_series($2::int, $3::int) AS g`,
        [passwordHash, start + from - 1, start + to - 1],
      );
    },
  };
}

/**
 * Orders spread round-robin over the first `customers` users (by user id order), each with 1 to 3
 * lines priced from the catalogue; newest ids are the newest orders. 2 % are `failed`, the rest
 * `completed` (so the order worker has no backlog at the start); 1 % came from a platform (source
 * `shopify`, an external id of their own), so the admin list's origin filters select something.
 * Totals are synthetic.
 */
export function ordersStep(count: number, customers: number, products: number, client: pg.ClientBase): Step {
  return {
    rows: count,
    run: async (from, to) => {
      const firstUser = await client.query<{ id: number }>('SELECT min(id) AS id FROM users');
      const before = await maxId(client, 'orders');
      await client.query(
        `INSERT INTO orders (user_id, status, total_amount, shipping_address, failure_reason, source, external_id, created_at, updated_at)
         SELECT $1::int + (g % $2::int),
                CASE WHEN g % 50 = 0 THEN 'failed' ELSE 'completed' END,
                CASE WHEN g % 50 = 0 THEN 0 ELSE 10 + (g % 500) END,
                g || ' Bench Street, Springfield',
                CASE WHEN g % 50 = 0 THEN 'INSUFFICIENT_STOCK' END,
                CASE WHEN g % 100 = 7 THEN 'shopify' ELSE 'api' END,
                CASE WHEN g % 100 = 7 THEN 'bench-' || g END,
                now() - interval '400 days' + g * interval '10 seconds',
                now() - interval '400 days' + g * interval '10 seconds'
         FROM generate_series($3::int, $4::int) AS g`,
        [Number(firstUser.rows[0].id), customers, before + 1, before + (to - from + 1)],
      );
      await client.query(
        `INSERT INTO order_items (order_id, product_id, product_name, quantity, unit_price)
         SELECT o.id, p.id, p.name, 1 + ((o.id + k) % 3), p.price
         FROM orders o
         CROSS JOIN LATERAL generate_series(1, 1 + o.id % 3) AS k
         JOIN products p ON p.id = 1 + ((o.id * 7 + k * 13) % $2::int)
         WHERE o.id > $1::int`,
        [before, products],
      );
    },
  };
}

export async function seed(client: pg.ClientBase, plan: SeedPlan): Promise<void> {
  // products first and alone: ids 1..products are what the order lines point at
  await client.query(
    `INSERT INTO products (sku, name, price, stock)
     SELECT 'BENCH-SKU-' || g, 'Bench product ' || g, 1 + (g % 100) + 0.99, 1000000000
     FROM generate_series(1, $1::int) AS g`,
    [plan.products],
  );
  await runSteps('users', [usersStep(1, plan.users, plan.passwordHash, client)]);
  await runSteps('orders+lines', [ordersStep(plan.orders, plan.customers, plan.products, client)]);
  await runSteps('items', [
    {
      rows: plan.customers * plan.itemsPerCustomer,
      run: async (from, to) => {
        await client.query(
          `INSERT INTO items (user_id, name, description, price, is_active)
           SELECT u.first + ((g - 1) % $1::int), 'Item ' || g, 'A bench item', 1 + (g % 1000) / 10.0, g % 10 <> 0
           FROM generate_series($2::int, $3::int) AS g, (SELECT min(id) AS first FROM users) AS u`,
          [plan.customers, from, to],
        );
      },
    },
  ]);
  await vacuumAnalyze(client);
}

/** Adds users up to `total`, numbering on from the highest existing one. */
export async function growUsers(client: pg.ClientBase, total: number, passwordHash: string): Promise<void> {
  const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM users');
  const have = Number(rows[0].n);
  if (have >= total) return;
  await runSteps('users', [usersStep(have + 1, total - have, passwordHash, client)]);
}

export async function growOrders(client: pg.ClientBase, total: number, customers: number, products: number): Promise<void> {
  const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM orders');
  const have = Number(rows[0].n);
  if (have >= total) return;
  await runSteps('orders+lines', [ordersStep(total - have, customers, products, client)]);
}

/** Statistics and the visibility map, as autovacuum would leave the tables in steady state. */
export async function vacuumAnalyze(client: pg.ClientBase): Promise<void> {
  await client.query('VACUUM (ANALYZE) users, products, orders, order_items, items');
}
