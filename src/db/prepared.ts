import pg from 'pg';

/** Statements worth preparing: data statements with parameters (not DDL, not BEGIN/COMMIT). */
const PREPARABLE = /^\s*(select|insert|update|delete|with)\b/i;

/**
 * Distinct statement texts given a name, per process. Every connection prepares a name on its first
 * use, so this also bounds the prepared statements a backend holds. Texts past the limit (say, IN
 * lists of every length) run unnamed, as before.
 */
export const MAX_PREPARED_STATEMENTS = 1000;

const names = new Map<string, string>();

function nameFor(text: string): string | undefined {
  let name = names.get(text);
  if (name === undefined && names.size < MAX_PREPARED_STATEMENTS) {
    name = `oas_${names.size.toString(36)}`;
    names.set(text, name);
  }
  return name;
}

/** What PostgreSQL says when a table's columns changed under a prepared `SELECT *`/`RETURNING *`. */
function isStalePlan(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | null;
  return e?.code === '0A000' && /cached plan must not change result type/.test(e.message ?? '');
}

/**
 * A pg.Client that sends each parameterised data statement as a named prepared statement: it is
 * parsed and planned once per connection instead of on every execution. On this service that halves
 * PostgreSQL's CPU per request: most of its statements are small and
 * their parse and plan cost more than their execution. PostgreSQL keeps a custom plan for the first
 * five executions and switches to a generic one only where that costs no more.
 *
 * A migration that changes a table's columns makes PostgreSQL refuse the statements prepared before
 * it that return whole rows. The statement that meets this fails once; the connection then prepares
 * every statement afresh under new names.
 *
 * Not for a transaction-pooling proxy (PgBouncer `pool_mode=transaction` before 1.21): a named
 * statement lives on one server connection. `DATABASE_PREPARED_STATEMENTS=false` turns it off.
 */
export class PreparingClient extends pg.Client {
  private generation = 0;

  /** Whether `text` runs as a named prepared statement. */
  protected prepares(text: string, values: readonly unknown[]): boolean {
    return values.length > 0 && PREPARABLE.test(text);
  }

  // pg.Client's overloads cannot be restated in a subclass; Kysely and pg-boss call query(text, values[, cb])
  override query(...args: unknown[]): never {
    const [text, values, callback] = args;
    const name = typeof text === 'string' && Array.isArray(values) && this.prepares(text, values) ? nameFor(text) : undefined;
    if (name === undefined) return (super.query as (...a: unknown[]) => never)(...args);
    const config = { text, values, name: this.generation === 0 ? name : `${name}_${this.generation}` };
    const stale = (err: unknown) => {
      if (isStalePlan(err)) this.generation++;
    };
    if (typeof callback === 'function') {
      return (super.query as (...a: unknown[]) => never)(config, (err: unknown, res: unknown) => {
        stale(err);
        (callback as (e: unknown, r: unknown) => void)(err, res);
      });
    }
    return (super.query as (c: unknown) => Promise<unknown>)(config).catch((err: unknown) => {
      stale(err);
      throw err;
    }) as never;
  }
}

/** pg-boss's fetch of a queue's next jobs (plans.fetchNextJob). */
const JOB_FETCH = /^\s*WITH\s+next\s+AS\s*\(/;

/**
 * The client of pg-boss's own pool: only its job fetches are prepared. A worker sends one per wake-up
 * and one per backstop poll of every queue, idle or not. Its text is fixed per queue (the queue's
 * name and batch size are written into it; the groups to skip are a parameter), and PostgreSQL spent
 * six times longer planning it than running it on an empty queue (0.27–0.40 ms against 0.04–0.06 ms).
 * pg-boss's other statements stay unnamed: it settles jobs with `id = ANY($2)`, and a generic plan,
 * which cannot see how long that array is, scans every retained job of the queue.
 */
export class JobFetchPreparingClient extends PreparingClient {
  protected override prepares(text: string): boolean {
    return JOB_FETCH.test(text);
  }
}
