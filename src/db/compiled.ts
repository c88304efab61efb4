import { createQueryId, type Compilable, type CompiledQuery, type Kysely } from 'kysely';
import type { Database } from './schema.ts';

const SLOT = Symbol('compiled query argument');

interface Slot {
  readonly [SLOT]: string;
}

function isSlot(value: unknown): value is Slot {
  return typeof value === 'object' && value !== null && SLOT in value;
}

/**
 * A query that Kysely builds and compiles once, then runs with each call's arguments, for the
 * hottest reads: building the operation tree and compiling it on every request costs more CPU than
 * the rest of such a route.
 *
 * `build` gets stand-ins for the arguments. Each must be used as a value, where Kysely makes a
 * query parameter (`where(col, '=', a.x)`, `limit(a.n)`), never looked at or branched on; one that
 * does not become a parameter fails the first call. PGlite and pg compile to the same text, so one
 * compilation serves every database and transaction.
 */
export function compileOnce<A extends Record<string, unknown>, R>(
  build: (db: Kysely<Database>, args: A) => Compilable<R>,
): (db: Kysely<Database>, args: A) => Promise<R[]> {
  let compiled: CompiledQuery<R> | undefined;
  return async (db, args) => {
    compiled ??= compileWithSlots(db, build);
    const parameters = compiled.parameters.map((p) => (isSlot(p) ? args[p[SLOT]] : p));
    const result = await db.executeQuery<R>({ ...compiled, parameters, queryId: createQueryId() });
    return result.rows;
  };
}

function compileWithSlots<A extends Record<string, unknown>, R>(db: Kysely<Database>, build: (db: Kysely<Database>, args: A) => Compilable<R>): CompiledQuery<R> {
  const asked = new Set<string>();
  const slots = new Proxy({} as A, {
    get(_target, key) {
      if (typeof key !== 'string') return undefined;
      asked.add(key);
      return { [SLOT]: key } satisfies Slot;
    },
  });
  const compiled = build(db, slots).compile();
  const bound = new Set(compiled.parameters.filter(isSlot).map((p) => p[SLOT]));
  const unbound = [...asked].filter((key) => !bound.has(key));
  if (unbound.length > 0) throw new Error(`compileOnce: argument(s) ${unbound.join(', ')} did not become query parameters`);
  return compiled;
}
