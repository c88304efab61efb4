import assert from 'node:assert/strict';
import pg from 'pg';
import { until } from './infra.ts';

/** What the inspector needs of a database: pg's pool and PGlite both answer it. */
export interface SqlSession {
  query(text: string, values: unknown[]): Promise<{ rows: unknown[] }>;
  close(): Promise<void>;
}

/**
 * Direct SQL on a scenario's database: seeding and the invariants that must hold whatever the
 * fault was (no lost order, stock reserved exactly once, one final transition per order).
 */
export class Inspector {
  private readonly session: SqlSession;

  /** On PostgreSQL (a URL), or on any session that answers SQL (an embedded database the test opened). */
  constructor(source: string | SqlSession) {
    if (typeof source !== 'string') {
      this.session = source;
      return;
    }
    const pool = new pg.Pool({ connectionString: source, max: 3, connectionTimeoutMillis: 3000 });
    pool.on('error', () => {});
    this.session = { query: (text, values) => pool.query(text, values), close: () => pool.end() };
  }

  async close(): Promise<void> {
    await this.session.close();
  }

  async query<T>(text: string, values: unknown[] = []): Promise<T[]> {
    return (await this.session.query(text, values)).rows as T[];
  }

  /** Products with the given stocks; returns id → initial stock. */
  async seedProducts(tag: string, stocks: number[], price = '9.99'): Promise<Map<number, number>> {
    const initial = new Map<number, number>();
    for (const [i, stock] of stocks.entries()) {
      const [row] = await this.query<{ id: number }>(
        'INSERT INTO products (sku, name, price, stock, is_active) VALUES ($1, $2, $3, $4, true) RETURNING id',
        [`${tag}-${i}`, `${tag} product ${i}`, price, stock],
      );
      initial.set(row.id, stock);
    }
    return initial;
  }

  async orderStatuses(ids?: number[]): Promise<Map<number, string>> {
    const rows = ids
      ? await this.query<{ id: number; status: string }>('SELECT id, status FROM orders WHERE id = ANY($1::int[])', [ids])
      : await this.query<{ id: number; status: string }>('SELECT id, status FROM orders');
    return new Map(rows.map((r) => [r.id, r.status]));
  }

  /** Waits until every given order (all orders without ids) is final: completed, failed or cancelled. */
  async waitAllFinal(ids: number[] | undefined, timeoutMs: number): Promise<number> {
    const started = Date.now();
    await until(
      'every order to reach completed, failed or cancelled',
      async () => {
        const rows = ids
          ? await this.query<{ n: number }>(
              "SELECT count(*)::int AS n FROM orders WHERE id = ANY($1::int[]) AND status NOT IN ('completed', 'failed', 'cancelled')",
              [ids],
            )
          : await this.query<{ n: number }>("SELECT count(*)::int AS n FROM orders WHERE status NOT IN ('completed', 'failed', 'cancelled')");
        return rows[0].n === 0 ? true : undefined;
      },
      timeoutMs,
      250,
    );
    return Date.now() - started;
  }

  /**
   * Waits until no stored inbound webhook is left `received`. Its processing runs before its order
   * exists, so `waitAllFinal` alone can return while acknowledged webhooks are still queued.
   */
  async waitInboundSettled(timeoutMs: number): Promise<number> {
    const started = Date.now();
    await until(
      'every stored inbound webhook to be processed or failed',
      async () => {
        const [row] = await this.query<{ n: number }>("SELECT count(*)::int AS n FROM inbound_webhooks WHERE status = 'received'");
        return row.n === 0 ? true : undefined;
      },
      timeoutMs,
      250,
    );
    return Date.now() - started;
  }

  async statusCounts(): Promise<Record<string, number>> {
    const rows = await this.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM orders GROUP BY status');
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  }

  /**
   * initial stock = current stock + units of completed orders' lines, for every product: a cancelled
   * order holds none (a completed one's units went back when it was cancelled, and only then).
   */
  async assertStockInvariant(initial: Map<number, number>): Promise<{ reserved: number }> {
    const rows = await this.query<{ id: number; stock: number; reserved: number }>(
      `SELECT p.id, p.stock,
              coalesce((SELECT sum(oi.quantity) FROM order_items oi JOIN orders o ON o.id = oi.order_id
                        WHERE oi.product_id = p.id AND o.status = 'completed'), 0)::int AS reserved
         FROM products p WHERE p.id = ANY($1::int[])`,
      [[...initial.keys()]],
    );
    assert.equal(rows.length, initial.size, 'every seeded product still exists');
    let reserved = 0;
    for (const r of rows) {
      assert.ok(r.stock >= 0, `product ${r.id} has negative stock ${r.stock}`);
      assert.equal(r.stock + r.reserved, initial.get(r.id), `product ${r.id}: stock ${r.stock} + reserved ${r.reserved} != initial ${initial.get(r.id)}`);
      reserved += r.reserved;
    }
    return { reserved };
  }

  /**
   * Each order's events: sequence 1..n without gaps or repeats, one `order.created`, and exactly
   * one transition into a final state (orders never retried through the API); a cancelled order
   * has exactly one cancellation, as its last event, after at most one completion or failure.
   */
  async assertOrderEvents(ids?: number[]): Promise<{ events: number }> {
    const filter = ids ? 'WHERE o.id = ANY($1::int[])' : '';
    const rows = await this.query<{ id: number; status: string; seqs: number[]; finals: number; cancels: number; created: number; last_status: string }>(
      `SELECT o.id, o.status,
              array_agg(e.sequence ORDER BY e.sequence) AS seqs,
              count(*) FILTER (WHERE e.type = 'order.status_changed' AND e.status IN ('completed', 'failed'))::int AS finals,
              count(*) FILTER (WHERE e.type = 'order.status_changed' AND e.status = 'cancelled')::int AS cancels,
              count(*) FILTER (WHERE e.type = 'order.created')::int AS created,
              (array_agg(e.status ORDER BY e.sequence DESC))[1] AS last_status
         FROM orders o LEFT JOIN order_events e ON e.order_id = o.id ${filter}
        GROUP BY o.id, o.status`,
      ids ? [ids] : [],
    );
    let events = 0;
    for (const r of rows) {
      assert.deepEqual(r.seqs, r.seqs.map((_, i) => i + 1), `order ${r.id}: event sequences ${r.seqs.join(',')} are not 1..n`);
      assert.equal(r.created, 1, `order ${r.id}: ${r.created} order.created events`);
      if (r.status === 'cancelled') {
        assert.equal(r.cancels, 1, `order ${r.id}: ${r.cancels} cancellations`);
        assert.ok(r.finals <= 1, `order ${r.id}: ${r.finals} completions or failures before its cancellation`);
      } else {
        assert.equal(r.cancels, 0, `order ${r.id} is ${r.status} after a cancellation`);
        assert.equal(r.finals, 1, `order ${r.id}: ${r.finals} transitions to a final state`);
      }
      assert.equal(r.last_status, r.status, `order ${r.id}: last event status ${r.last_status} != order status ${r.status}`);
      events += r.seqs.length;
    }
    return { events };
  }

  /** pg-boss figures of one queue: jobs by state and how many were retried. */
  async jobFigures(queue: string): Promise<{ states: Record<string, number>; retried: number }> {
    const rows = await this.query<{ state: string; n: number; retried: number }>(
      `SELECT state::text, count(*)::int AS n, count(*) FILTER (WHERE retry_count > 0)::int AS retried
         FROM pgboss.job WHERE name = $1 GROUP BY state`,
      [queue],
    );
    return {
      states: Object.fromEntries(rows.map((r) => [r.state, r.n])),
      retried: rows.reduce((s, r) => s + r.retried, 0),
    };
  }
}
