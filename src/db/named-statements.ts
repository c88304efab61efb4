import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type pg from 'pg';

/** Data statements with parameters are worth preparing; DDL and transaction control are not. */
const PREPARABLE = /^\s*(select|insert|update|delete|with)\b/i;

/** Statement texts named in this process, which also bounds what a server backend prepares; more run unnamed. */
const MAX_NAMED_STATEMENTS = 1000;

/** What PostgreSQL answers when a table's columns changed under a prepared `SELECT *`. */
function isStalePlan(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | null;
  return e?.code === '0A000' && /cached plan must not change result type/.test(e.message ?? '');
}

/**
 * Kysely's pool over a pg.Pool running each parameterised data statement prepared, once per connection; a connection a
 * migration made stale closes on release. `prepare` false (a transaction-pooling proxy): every statement unnamed.
 */
export function namedStatementPool(pool: pg.Pool, prepare: boolean): PostgresPool {
  const names = new Map<string, string>();
  const nameOf = (text: string): string | undefined => {
    let name = names.get(text);
    if (name === undefined && names.size < MAX_NAMED_STATEMENTS) {
      name = `oas_${names.size.toString(36)}`;
      names.set(text, name);
    }
    return name;
  };
  return {
    options: pool.options,
    end: () => pool.end(),
    async connect(): Promise<PostgresPoolClient> {
      const client = await pool.connect();
      let stale = false;
      // pg's callback form: its promise form, a callback set on the query after it is built, kept each query's rows
      // until a mark-compact (6.9 KB promoted per 20-row query, against 0.1; decision 154)
      const query = <R>(text: string, values: readonly unknown[]) =>
        new Promise<PostgresQueryResult<R>>((resolve, reject) => {
          const name = prepare && values.length > 0 && PREPARABLE.test(text) ? nameOf(text) : undefined;
          client.query({ text, values: [...values], ...(name === undefined ? {} : { name }) }, (err, result) => {
            if (err) stale ||= isStalePlan(err);
            return err ? reject(err) : resolve(result as unknown as PostgresQueryResult<R>);
          });
        });
      return {
        query: query as PostgresPoolClient['query'],
        release: (destroy?: boolean) => client.release(destroy === true || stale),
      };
    },
  };
}
