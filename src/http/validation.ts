import { createRequire } from 'node:module';
import { Ajv, type Options, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';

/** A validator as Fastify calls it: true or false, with the errors of the last call on `errors`. */
interface Validator {
  (data: unknown): boolean;
  errors?: ValidateFunction['errors'];
}

/**
 * Compiles on the first call: Ajv's and fast-json-stringify's generated code for every route's
 * schemas held about 9 MB at start-up, most of it for routes a given process rarely or never serves.
 */
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

function makeAjv(opts: Options): Ajv {
  const ajv = new Ajv({ allErrors: false, removeAdditional: false, useDefaults: true, strict: false, ...opts });
  addFormats.default(ajv);
  return ajv;
}

/**
 * Two validators: bodies are checked strictly (no type coercion, unknown properties rejected rather
 * than silently dropped — Fastify's default strips them), while query strings, path parameters and
 * headers, which are always text on the wire, are coerced to their declared types. Request schemas
 * are self-contained (no $ref), so neither instance needs the shared schemas.
 */
export function registerValidation(app: FastifyInstance): void {
  const bodyAjv = makeAjv({ coerceTypes: false });
  const textAjv = makeAjv({ coerceTypes: 'array' });
  app.setValidatorCompiler(({ schema, httpPart }) => {
    if (httpPart === 'body') return compiledOnFirstUse(() => bodyAjv.compile(schema) as Validator);
    return compiledOnFirstUse(() => withBooleanWords(textAjv.compile(schema) as Validator, booleanProperties(schema)));
  });
  registerJsonParser(app);
}

/**
 * The words a boolean query parameter may be written as, in any case: ajv alone coerces only
 * `true` and `false`, while clients send `True` (Python's requests), `1`, `yes` or `on`.
 */
const BOOLEAN_WORDS = new Map<string, boolean>([
  ...['true', 't', 'yes', 'y', 'on', '1'].map((w) => [w, true] as const),
  ...['false', 'f', 'no', 'n', 'off', '0'].map((w) => [w, false] as const),
]);

function booleanProperties(schema: unknown): string[] {
  const props = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  return Object.keys(props).filter((k) => props[k].type === 'boolean');
}

function withBooleanWords(validate: Validator, keys: string[]): Validator {
  if (keys.length === 0) return validate;
  const wrapped = (data: unknown): boolean => {
    if (data !== null && typeof data === 'object') {
      const record = data as Record<string, unknown>;
      for (const key of keys) {
        const value = record[key];
        if (typeof value !== 'string') continue;
        const word = BOOLEAN_WORDS.get(value.toLowerCase());
        if (word !== undefined) record[key] = word;
      }
    }
    const ok = validate(data);
    wrapped.errors = validate.errors;
    return ok;
  };
  wrapped.errors = null as Validator['errors'];
  return wrapped;
}

/**
 * JSON bodies with Fastify's own parser (prototype-poisoning checks included), except that an
 * empty body is no body: a client that sends `Content-Type: application/json` on every request
 * must be able to DELETE, or call an action that takes no body. A route that needs a body still
 * answers 422, from its schema.
 */
function registerJsonParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string; // parseAs: 'string'
    if (text.length === 0) {
      done(null, undefined);
      return;
    }
    void parse(request, text, done); // Fastify's parser answers through `done`
  });
}
