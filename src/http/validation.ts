import { createRequire } from 'node:module';
import { Ajv, type Options, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { AppError, MAX_JSON_DEPTH, invalidQuery } from './errors.ts';

/** A validator as Fastify calls it: true or false, with the errors of the last call on `errors`. */
interface Validator {
  (data: unknown): boolean;
  errors?: ValidateFunction['errors'];
}

/** Compiles on the first call: compiling every route's schemas at start-up holds memory for routes rarely served. */
function compiledOnFirstUse(compile: () => Validator): Validator {
  let validate: Validator | undefined;
  const lazy: Validator = (data) => {
    validate ??= compile();
    const ok = validate(data);
    lazy.errors = validate.errors;
    return ok;
  };
  lazy.errors = null;
  return lazy;
}

type SerializerFactory = (externalSchemas: unknown, options: unknown) => (route: unknown) => (data: unknown) => string;
// the serializer compiler Fastify uses when given none, resolved through Fastify's own dependencies
const fastifyRequire = createRequire(import.meta.resolve('fastify'));
const { SerializerSelector } = fastifyRequire('@fastify/fast-json-stringify-compiler') as { SerializerSelector: () => SerializerFactory };

/** Fastify's response serializers, each built on the first response it writes (see compiledOnFirstUse). */
export const lazySchemaController: FastifyServerOptions['schemaController'] = {
  compilersFactory: {
    buildSerializer: ((externalSchemas: unknown, options: unknown) => {
      const build = SerializerSelector()(externalSchemas, options);
      return (route: unknown) => {
        let serialize: ((data: unknown) => string) | undefined;
        return (data: unknown) => (serialize ??= build(route))(data);
      };
    }) as never,
  },
};

/** `strict: false` allows OpenAPI-only keywords but turns off `strictNumbers`, which refuses `1e309` (Infinity). */
function makeAjv(opts: Options): Ajv {
  const ajv = new Ajv({ allErrors: false, removeAdditional: false, useDefaults: true, strict: false, strictNumbers: true, ...opts });
  addFormats.default(ajv);
  withinDatabaseRange(ajv, 'date');
  withinDatabaseRange(ajv, 'date-time');
  replaceMultipleOf(ajv);
  return ajv;
}

/** The range PostgreSQL and the API's ISO strings share: years 1 to 9999 (UTC). */
export const EARLIEST_MS = Date.parse('0001-01-01T00:00:00Z');
export const AFTER_LATEST_MS = Date.parse('+010000-01-01T00:00:00Z');

/** UTC hours and days, whole multiples of their length since the epoch, and the buckets a count covers without `from`. */
export const BUCKET_MS = { hour: 3_600_000, day: 86_400_000 } as const;
const DEFAULT_BUCKETS = { hour: 24, day: 30 } as const;
/** The most buckets one answer holds: a month of hours, or about two years of days. */
export const MAX_BUCKETS = 744;

/** A bucketed count's range as asked: `to` (default now) and `from` (default `to` − 24 hours or 30 days), in ms. */
export function askedRange(q: { from?: string; to?: string }, bucket: keyof typeof BUCKET_MS): { from: number; to: number } {
  const to = q.to === undefined ? Date.now() : Date.parse(q.to);
  const from = q.from === undefined ? to - DEFAULT_BUCKETS[bucket] * BUCKET_MS[bucket] : Date.parse(q.from);
  // a form the schema's format passes but Date does not read (a leap second)
  if (Number.isNaN(to)) throw invalidQuery('to', 'not a date-time this service reads');
  if (Number.isNaN(from)) throw invalidQuery('from', 'not a date-time this service reads');
  return { from, to };
}

/** A date or date-time must name a year from 1 to 9999 (UTC), which PostgreSQL accepts: otherwise 422. */
function withinDatabaseRange(ajv: Ajv, name: 'date' | 'date-time'): void {
  const format = ajv.formats[name];
  if (typeof format !== 'object' || format instanceof RegExp || typeof format.validate !== 'function') throw new Error(`ajv-formats has no ${name} check`);
  const { validate, compare } = format as { validate: (s: string) => boolean; compare?: (a: string, b: string) => number | undefined };
  ajv.addFormat(name, {
    type: 'string',
    validate: (s: string) => {
      if (!validate(s)) return false;
      const at = Date.parse(name === 'date' ? `${s}T00:00:00Z` : s);
      return Number.isNaN(at) || (at >= EARLIEST_MS && at < AFTER_LATEST_MS);
    },
    ...(compare ? { compare } : {}),
  });
}

/** `multipleOf` a power-of-ten step holds when rounding to its decimals gives the same double (Ajv's division refuses 19.99 for 0.01). */
function replaceMultipleOf(ajv: Ajv): void {
  ajv.removeKeyword('multipleOf');
  ajv.addKeyword({
    keyword: 'multipleOf',
    type: 'number',
    schemaType: 'number',
    error: { message: ({ schema }) => `must be a multiple of ${String(schema)}` },
    compile: (step: number) => {
      const decimals = Math.round(-Math.log10(step));
      if (decimals >= 0 && decimals <= 20 && 10 ** -decimals === step) {
        return (value: number) => Number(value.toFixed(decimals)) === value;
      }
      return (value: number) => Number.isInteger(value / step);
    },
  });
}

/** Bodies: strict (no coercion, unknown properties rejected); query, path, headers (text on the wire): coerced. No $ref in request schemas. */
export function registerValidation(app: FastifyInstance): void {
  const bodyAjv = makeAjv({ coerceTypes: false });
  const textAjv = makeAjv({ coerceTypes: 'array' });
  app.setValidatorCompiler(({ schema, httpPart }) => {
    if (httpPart === 'body') return compiledOnFirstUse(() => bodyAjv.compile(schema) as Validator);
    return compiledOnFirstUse(() => textValidator(textAjv.compile(schema) as Validator, schema));
  });
  registerJsonParser(app);
}

/** Boolean words in any case: ajv coerces only `true` and `false`, clients send `True`, `1`, `yes`. */
const BOOLEAN_WORDS = new Map<string, boolean>([
  ...['true', 't', 'yes', 'y', 'on', '1'].map((w) => [w, true] as const),
  ...['false', 'f', 'no', 'n', 'off', '0'].map((w) => [w, false] as const),
]);

/** A query, path or header validator: boolean words, and every number finite (ajv coerces `1e309` to Infinity). */
function textValidator(validate: Validator, schema: unknown): Validator {
  const props = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  const booleanKeys = Object.keys(props).filter((k) => props[k].type === 'boolean');
  const wrapped: Validator = (data) => {
    const record = data !== null && typeof data === 'object' ? (data as Record<string, unknown>) : {};
    for (const key of booleanKeys) {
      const value = record[key];
      const word = typeof value === 'string' ? BOOLEAN_WORDS.get(value.toLowerCase()) : undefined;
      if (word !== undefined) record[key] = word;
    }
    const ok = validate(data);
    wrapped.errors = validate.errors;
    const infinite = ok ? Object.keys(record).find((key) => typeof record[key] === 'number' && !Number.isFinite(record[key])) : undefined;
    if (infinite === undefined) return ok;
    wrapped.errors = [{ instancePath: `/${infinite}`, schemaPath: '#/type', keyword: 'type', params: { type: 'number' }, message: 'must be a finite number' }];
    return false;
  };
  return wrapped;
}

/** True when JSON text nests more than `max` levels: one pass, nothing allocated, unlike parsing a deep body. */
export function nestedDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/** Fastify's JSON parser, but an empty body is no body (so DELETE with the JSON content type works) and one nested too deep is refused unparsed. */
function registerJsonParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string; // parseAs: 'string'
    if (text.length === 0) done(null, undefined);
    else if (nestedDeeperThan(text, MAX_JSON_DEPTH)) done(new AppError('BAD_REQUEST', `Request body is nested more than ${MAX_JSON_DEPTH} levels deep`), undefined);
    else void parse(request, text, done); // Fastify's parser answers through `done`
  });
}
