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

/**
 * The end of a statement's text that makes it its transaction's last: `PreparingClient` sends the
 * transaction's COMMIT in the same write, and answers Kysely's COMMIT itself. Kysely hands a driver
 * nothing but a statement's text and values, so the text says it; it is a comment, which every other
 * client (PGlite, a plain pg.Client) runs as it is, committing with Kysely's COMMIT as before. The
 * caller must run nothing after it in the transaction that could fail: once the statement returns,
 * the transaction has committed, and a later throw can no longer roll it back.
 */
export const THEN_COMMIT = ' /* then commit */';

/** What Kysely sends to open and close a transaction with default settings. */
const BEGIN = 'begin';
const ENDS = new Set(['commit', 'rollback']);

/** pg's result of a transaction-control statement, for one this client answers without sending it. */
function answeredHere(command: string) {
  return Promise.resolve({ command: command.toUpperCase(), rowCount: null, rows: [], fields: [] });
}

/** The parts of pg's connection and query objects that the deferred BEGIN uses; @types/pg leaves them out. */
interface WireConnection {
  parsedStatements: Record<string, string>;
  parse(msg: { text: string; name: string; types: unknown[] }): void;
  bind(msg: { portal: string; statement: string; values: unknown[] }): void;
  execute(msg: { portal: string; rows: number | undefined }): void;
  sync(): void;
}
interface WireQuery {
  name?: string;
  portal: string;
  callback?: (err: Error | null, res?: unknown) => void;
  prepare(connection: WireConnection): void;
  handleCommandComplete(msg: unknown, connection: WireConnection): void;
  /** pg's Execute and Sync of the statement (Sync alone ends it when `rows` is unset) */
  _getRows(connection: WireConnection, rows: number | undefined): void;
}
type WireQueryKind = new (text: string, values: readonly unknown[]) => WireQuery;
const WireQueryBase = pg.Query as unknown as WireQueryKind;

/**
 * A named statement as a pg query object, and the promise of its result. Built from its text and
 * values: given a config object, pg copies it through property descriptors (cloneQueryConfig), which
 * took about 2 % of the API's and the worker's CPU. The name is set afterwards; pg's constructor
 * only copies it.
 */
function namedQuery(config: { text: string; values: readonly unknown[]; name: string }, ends?: { begin: boolean; commit: boolean }): { query: WireQuery; result: Promise<unknown> } {
  const query = ends === undefined ? new WireQueryBase(config.text, config.values) : new EnclosedQuery(config.text, config.values, ends);
  query.name = config.name;
  const result = new Promise((resolve, reject) => {
    query.callback = (err, res) => (err ? reject(err) : resolve(res));
  });
  return { query, result };
}

/** Parse, Bind and Execute of a transaction-control statement, on the unnamed statement and portal. */
function sendControl(connection: WireConnection, text: string): void {
  connection.parse({ text, name: '', types: [] });
  connection.bind({ portal: '', statement: '', values: [] });
  connection.execute({ portal: '', rows: 0 });
}

/**
 * A named statement sent with its transaction's BEGIN in front of it and/or its COMMIT behind it, in
 * one write: BEGIN's Parse, Bind and Execute, the statement's (Parse,) Bind, Describe and Execute,
 * COMMIT's Parse, Bind and Execute, and one Sync. PostgreSQL runs them in order and answers once,
 * so opening or closing the transaction costs no round trip of its own. An error skips the rest up
 * to the Sync, as for any statement: a failed statement leaves its transaction open (and aborted)
 * for the ROLLBACK that follows, and never commits it.
 */
class EnclosedQuery extends WireQueryBase {
  /** BEGIN's CommandComplete comes first and COMMIT's last; the result is the statement's alone */
  private completes = 0;
  private readonly begin: boolean;
  private readonly commit: boolean;

  constructor(text: string, values: readonly unknown[], ends: { begin: boolean; commit: boolean }) {
    super(text, values);
    this.begin = ends.begin;
    this.commit = ends.commit;
  }

  override prepare(connection: WireConnection): void {
    // the unnamed statement and portal: the statement that follows binds its own
    if (this.begin) sendControl(connection, 'BEGIN');
    super.prepare(connection);
  }

  override _getRows(connection: WireConnection, rows: number | undefined): void {
    if (!this.commit || rows) {
      super._getRows(connection, rows);
      return;
    }
    connection.execute({ portal: this.portal, rows: undefined });
    sendControl(connection, 'COMMIT');
    connection.sync();
  }

  override handleCommandComplete(msg: unknown, connection: WireConnection): void {
    if (this.completes === (this.begin ? 1 : 0)) super.handleCommandComplete(msg, connection);
    this.completes++;
  }
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
 * A transaction's BEGIN is held back and sent in the same write as the transaction's first statement
 * (`EnclosedQuery`) when that statement is prepared on the connection already: every transaction
 * the service runs saves a round trip. A transaction that sends no statement sends
 * nothing at all. Its COMMIT goes in the same write as its last statement when that statement's
 * text ends with `THEN_COMMIT`: another round trip saved.
 *
 * Not for a transaction-pooling proxy (PgBouncer `pool_mode=transaction` before 1.21): a named
 * statement lives on one server connection. `DATABASE_PREPARED_STATEMENTS=false` turns it off.
 */
export class PreparingClient extends pg.Client {
  private generation = 0;
  /** Kysely asked for BEGIN and no statement has been sent since. */
  private beginHeld = false;
  /**
   * Where the connection stands in a transaction Kysely opened: none, open, or committed already by
   * its last statement (`THEN_COMMIT`), so that Kysely's COMMIT is answered here.
   */
  private transaction: 'none' | 'open' | 'committed' = 'none';

  /** Whether `text` runs as a named prepared statement. */
  protected prepares(text: string, values: readonly unknown[]): boolean {
    return values.length > 0 && PREPARABLE.test(text);
  }

  /** The name a statement runs under on this connection; `base` is its name in this process. */
  protected statementName(base: string): string {
    return this.generation === 0 ? base : `${base}_${this.generation}`;
  }

  protected wire(): WireConnection {
    return (this as unknown as { connection: WireConnection }).connection;
  }

  // pg.Client's overloads cannot be restated in a subclass; Kysely and pg-boss call query(text, values[, cb])
  override query(...args: unknown[]): never {
    const [text, values, callback] = args;
    const control = typeof text === 'string' && callback === undefined && (values === undefined || (Array.isArray(values) && values.length === 0));
    if (control && text === BEGIN && !this.beginHeld) {
      this.beginHeld = true;
      this.transaction = 'open';
      return answeredHere(text) as never;
    }
    if (control && ENDS.has(text)) {
      const unsent = this.beginHeld || this.transaction === 'committed';
      this.beginHeld = false;
      this.transaction = 'none';
      // nothing was sent since the BEGIN, or the last statement committed: no transaction to end
      if (unsent) return answeredHere(text) as never;
      return (super.query as (...a: unknown[]) => never)(...args);
    }
    if (this.transaction === 'committed') {
      // a statement after the one that committed would run outside the transaction its caller means
      return Promise.reject(new Error('the transaction was committed by its last statement (THEN_COMMIT): no statement may follow it')) as never;
    }
    const name = typeof text === 'string' && Array.isArray(values) && this.prepares(text, values) ? nameFor(text) : undefined;
    const config = name === undefined ? undefined : { text: text as string, values: values as unknown[], name: this.statementName(name) };
    const stale = (err: unknown) => {
      if (isStalePlan(err)) this.generation++;
    };
    const parsed = config !== undefined && callback === undefined && this.wire().parsedStatements[config.name] !== undefined;
    if (this.beginHeld && !parsed) {
      // a statement not prepared here yet, or not one to prepare: BEGIN goes on its own first. (Its
      // Parse would be answered before the statement's, and pg would take that answer as the
      // statement's.) Both are queued now, so statements issued together keep their order (Kysely
      // sends a transaction's one at a time anyway).
      this.beginHeld = false;
      const begin = (super.query as (t: string) => Promise<unknown>)(BEGIN);
      const rest = this.query(...args) as unknown;
      if (typeof callback === 'function') {
        // a BEGIN fails only with its connection, and the statement queued behind it with it
        begin.catch(() => {});
        return rest as never;
      }
      return Promise.all([begin, rest]).then(([, res]) => res) as never;
    }
    if (config === undefined) return (super.query as (...a: unknown[]) => never)(...args);
    if (typeof callback === 'function') {
      return (super.query as (...a: unknown[]) => never)(config, (err: unknown, res: unknown) => {
        stale(err);
        (callback as (e: unknown, r: unknown) => void)(err, res);
      });
    }
    const begin = this.beginHeld;
    const commit = this.transaction === 'open' && config.text.endsWith(THEN_COMMIT);
    this.beginHeld = false;
    if (!begin && !commit) return this.submit(namedQuery(config), stale);
    const result = this.submit(namedQuery(config, { begin, commit }), stale) as Promise<unknown>;
    if (!commit) return result as never;
    return result.then((res) => {
      this.transaction = 'committed';
      return res;
    }) as never;
  }

  private submit({ query, result }: { query: WireQuery; result: Promise<unknown> }, stale: (err: unknown) => void): never {
    (super.query as (q: unknown) => unknown)(query);
    return result.catch((err: unknown) => {
      stale(err);
      throw err;
    }) as never;
  }
}

/** pg-boss's fetch of a queue's next jobs (plans.fetchNextJob). */
const JOB_FETCH = /^\s*WITH\s+next\s+AS\s*\(/;

/** Executions of a prepared job fetch on one connection, after which it is planned afresh. */
export const FETCH_REPLAN_AFTER = 100;

/**
 * The client of pg-boss's own pool: only its job fetches are prepared. A worker sends one per wake-up
 * and one per backstop poll of every queue, idle or not. Its text is fixed per queue (the queue's
 * name and batch size are written into it; the groups to skip are a parameter), and PostgreSQL spent
 * six times longer planning it than running it on an empty queue (0.27–0.40 ms against 0.04–0.06 ms).
 * pg-boss's other statements stay unnamed: it settles jobs with `id = ANY($2)`, and a generic plan,
 * which cannot see how long that array is, scans every retained job of the queue.
 *
 * A fetch has no parameters, so its one plan is made when the connection first prepares it and is
 * made again only when the job table's statistics change, which on a server without autovacuum is
 * never. Planned on a near-empty table, the fetch's UPDATE walks every retained job of the queue
 * and looks each up in the claimed ids; on the table that grows behind it that is a scan per fetch.
 * Each fetch is therefore prepared afresh, under a new name, every `FETCH_REPLAN_AFTER` executions,
 * and the statement it replaces is deallocated.
 */
export class JobFetchPreparingClient extends PreparingClient {
  /** per statement name: executions of its current plan, and that plan's number */
  private readonly plans = new Map<string, { uses: number; plan: number }>();

  protected override prepares(text: string): boolean {
    return JOB_FETCH.test(text);
  }

  protected override statementName(base: string): string {
    const name = super.statementName(base);
    let current = this.plans.get(name);
    if (current === undefined) {
      current = { uses: 0, plan: 0 };
      this.plans.set(name, current);
    }
    if (current.uses === FETCH_REPLAN_AFTER) {
      this.deallocate(`${name}_p${current.plan}`);
      current.plan++;
      current.uses = 0;
    }
    current.uses++;
    return `${name}_p${current.plan}`;
  }

  /**
   * Queued ahead of the statement that replaces it, so every use of the old name was sent before.
   * Its failure (the old statement's own Parse failed) leaves nothing to deallocate.
   */
  private deallocate(name: string): void {
    const wire = this.wire();
    (pg.Client.prototype.query as (text: string, cb: (err: Error | null) => void) => void).call(this, `DEALLOCATE ${name}`, () => {
      delete wire.parsedStatements[name];
    });
  }
}
