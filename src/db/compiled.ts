import { createQueryId, sql, type Compilable, type CompiledQuery, type Expression, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from './schema.ts';

const SLOT = Symbol('compiled query argument');

interface Slot {
  readonly [SLOT]: string;
}

function isSlot(value: unknown): value is Slot {
  return typeof value === 'object' && value !== null && SLOT in value;
}

/**
 * A query that Kysely builds and compiles once, then runs with each call's arguments. Otherwise
 * every call builds the operation tree and compiles it to SQL again, which took about a tenth of the
 * API's CPU on the hottest reads.
 *
 * `build` gets stand-ins for the arguments. Each must be used as a value, that is, where Kysely
 * makes a query parameter (`where(col, '=', a.x)`, `limit(a.n)`), never looked at or branched on:
 * a query that differs by argument needs one `compileOnce` per shape. Every argument has to end up
 * as a parameter; one that does not (say, inspected by `build`) fails the first call.
 *
 * All our dialects (pg, PGlite) compile to the same PostgreSQL text, so one compilation serves
 * every database and transaction it is called with.
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

/**
 * SQL of another module's, for a statement compiled once per shape (`compileByShape`) to embed:
 * `build` gets stand-ins for `args`, each of which it must use as a value (see `compileOnce`), and
 * `key` names everything else the SQL depends on.
 */
export interface SqlPart<T, P> {
  key: string;
  args: Record<string, unknown>;
  build: (args: Record<string, unknown>, param: P) => Expression<T>;
}

/** Adds `part`'s values to a statement's `args`, each name under `prefix`, so two parts' names never meet. */
export function addPartArgs(args: Record<string, unknown>, prefix: string, part: SqlPart<unknown, never>): void {
  for (const [name, value] of Object.entries(part.args)) args[`${prefix}_${name}`] = value;
}

/** `part`'s SQL inside a statement's `build`, from the stand-ins of the values `addPartArgs` added under `prefix`. */
export function buildPart<T, P>(part: SqlPart<T, P>, prefix: string, slots: Record<string, unknown>, param: P): Expression<T> {
  return part.build(Object.fromEntries(Object.keys(part.args).map((name) => [name, slots[`${prefix}_${name}`]])), param);
}

/** Shapes kept per `compileByShape`: far more than any caller has; a bound, should a key leak a value. */
const SHAPES_KEPT = 256;

/**
 * `compileOnce` for a statement whose shape differs between calls (which optional parts it has,
 * which columns it sets): compiled once per `key`, which must name everything `build` looks at
 * besides the stand-ins it is given for `args`. Each call passes its own `build`, which runs only
 * when its key has not been compiled yet.
 */
export function compileByShape() {
  const shapes = new Map<string, CompiledQuery<unknown>>();
  return async <A extends Record<string, unknown>, R>(db: Kysely<Database>, key: string, args: A, build: (db: Kysely<Database>, args: A) => Statement<R>): Promise<R[]> => {
    let compiled = shapes.get(key) as CompiledQuery<R> | undefined;
    if (compiled === undefined) {
      compiled = compileWithSlots(db, build);
      if (shapes.size >= SHAPES_KEPT) shapes.delete(shapes.keys().next().value!);
      shapes.set(key, compiled);
    }
    const parameters = compiled.parameters.map((p) => (isSlot(p) ? args[p[SLOT]] : p));
    const result = await db.executeQuery<R>({ ...compiled, parameters, queryId: createQueryId() });
    return result.rows;
  };
}

/** A statement to compile: a query builder, or `sql` text (which compiles against a database). */
type Statement<R> = Compilable<R> | RawBuilder<R>;

function compileWithSlots<A extends Record<string, unknown>, R>(
  db: Kysely<Database>,
  build: (db: Kysely<Database>, args: A) => Statement<R>,
): CompiledQuery<R> {
  const asked = new Set<string>();
  const slots = new Proxy({} as A, {
    get(_target, key) {
      if (typeof key !== 'string') return undefined;
      asked.add(key);
      return { [SLOT]: key } satisfies Slot;
    },
  });
  const statement = build(db, slots);
  const compiled = 'isRawBuilder' in statement ? statement.compile(db) : statement.compile();
  const bound = new Set(compiled.parameters.filter(isSlot).map((p) => p[SLOT]));
  const unbound = [...asked].filter((key) => !bound.has(key));
  if (unbound.length > 0) throw new Error(`compileOnce: argument(s) ${unbound.join(', ')} did not become query parameters`);
  return compiled;
}

/** The smallest reach `compilePaged` compiles for: the first three pages of the default size (20) share it. */
const MIN_REACH = 64;

/**
 * How far into its list a page at `offset` of `limit` rows reaches, rounded up to a power of two
 * (at least MIN_REACH): at most a few dozen values, whatever the pages asked for.
 */
export function pageReach(limit: number, offset: number): number {
  return Math.max(MIN_REACH, 2 ** Math.ceil(Math.log2(Math.max(1, limit + offset))));
}

/**
 * `compileOnce` for a statement that reads one page of an ordered list: `build` gets, besides the
 * stand-ins for `args`, the page's reach (`pageReach`) as a literal, for an inner query that takes
 * the list's first `reach` rows, around which the page's own LIMIT and OFFSET (parameters) cut the
 * page; compiled once per reach.
 *
 * A prepared statement's generic plan costs a LIMIT or OFFSET parameter at a tenth of the rows
 * the filter matches each: for a user with a thousand orders it costs a page of twenty at five
 * times the plan made for the values, so PostgreSQL plans the statement anew at every execution
 * (bench/README.md, finding 69). Under a literal reach the generic plan costs what the page reads,
 * and PostgreSQL keeps it.
 */
export function compilePaged<A extends Record<string, unknown> & { limit: number; offset: number }, R>(
  build: (db: Kysely<Database>, args: A, reach: RawBuilder<number>) => Compilable<R>,
): (db: Kysely<Database>, args: A) => Promise<R[]> {
  const byReach = compileByShape();
  return (db, args) => {
    const reach = pageReach(args.limit, args.offset);
    return byReach(db, String(reach), args, (d, slots) => build(d, slots, sql.lit(reach)));
  };
}
