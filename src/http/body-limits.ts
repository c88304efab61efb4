import type { FastifyInstance } from 'fastify';

/** A route that takes no body still gets this much (an empty object, a stray newline). */
export const MIN_BODY_LIMIT = 1024;

/** Bytes of the longest JSON number text (`-1.2345678901234567e-308`). */
const NUMBER_BYTES = 24;
/**
 * Bytes one character of a string may take as a client sends it: four as UTF-8, which is how JSON
 * serialisers write text, and also covers ASCII percent-encoded in a form body (three).
 */
const BYTES_PER_CHAR = 4;

interface Schema {
  type?: string | string[];
  maxLength?: number;
  maxItems?: number;
  items?: Schema;
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
}

/**
 * The size in bytes of the largest compact JSON value `schema` accepts, or Infinity when the
 * schema sets no bound (a string without maxLength, an array without maxItems, an open object).
 */
export function largestJsonBytes(schema: Schema): number {
  if (schema.const !== undefined) return JSON.stringify(schema.const).length * BYTES_PER_CHAR;
  if (schema.enum) return Math.max(...schema.enum.map((v) => JSON.stringify(v).length * BYTES_PER_CHAR));
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return Math.max(...alternatives.map(largestJsonBytes));
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  return Math.max(...types.map((type) => largestOfType(schema, type)));
}

function largestOfType(schema: Schema, type: string | undefined): number {
  switch (type) {
    case 'string':
      return schema.maxLength === undefined ? Infinity : 2 + schema.maxLength * BYTES_PER_CHAR;
    case 'number':
    case 'integer':
      return NUMBER_BYTES;
    case 'boolean':
      return 5;
    case 'null':
      return 4;
    case 'array':
      return schema.maxItems === undefined || !schema.items ? Infinity : 2 + schema.maxItems * (largestJsonBytes(schema.items) + 1);
    case 'object': {
      if (schema.additionalProperties !== false) return Infinity;
      let bytes = 2;
      for (const [key, value] of Object.entries(schema.properties ?? {})) bytes += JSON.stringify(key).length + 2 + largestJsonBytes(value);
      return bytes;
    }
    case undefined:
    default:
      return Infinity;
  }
}

/**
 * Per-route body limits: each route reads at most its largest valid body, rounded up to whole KiB
 * (so the sign-in routes take a few KiB, not the service-wide limit). A route may set its own
 * `bodyLimit` (the platform webhook, whose body is the platform's); a schema without a bound gets
 * the service-wide `maxBytes`; a route without a body schema gets MIN_BODY_LIMIT.
 */
export function registerBodyLimits(app: FastifyInstance, opts: { maxBytes: number }): void {
  app.addHook('onRoute', (route) => {
    if (route.bodyLimit !== undefined) return;
    const body = route.schema?.body as Schema | undefined;
    const largest = body ? largestJsonBytes(body) : 0;
    route.bodyLimit = Math.min(opts.maxBytes, Math.max(MIN_BODY_LIMIT, Math.ceil(largest / 1024) * 1024));
  });
}
