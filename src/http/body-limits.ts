import type { FastifyInstance } from 'fastify';

/** A route that takes no body still gets this much (an empty object, a stray newline). */
export const MIN_BODY_LIMIT = 1024;

/** Bytes of the longest JSON number text (`-1.2345678901234567e-308`). */
const NUMBER_BYTES = 24;
/**
 * Bytes one character of a string may take as a client sends it. A schema's maxLength counts code
 * points, and an astral one escaped as a surrogate pair (`\uD83D\uDE00`, what Python's and PHP's
 * JSON encoders write by default) takes 12; so does a four-byte UTF-8 character percent-encoded in
 * a form body (`%F0%9F%98%80`). Raw UTF-8 (4) and an escaped BMP character (6) take less.
 */
const BYTES_PER_CHAR = 12;
/** Bytes of a property name's character escaped (`\u0069`): names are ASCII. */
const BYTES_PER_NAME_CHAR = 6;
/**
 * Whitespace a pretty-printer puts before each member or element and before a closing bracket: a
 * line break and the indentation of its level, at up to four spaces a level (Python's `indent=4`).
 */
const INDENT_BYTES = 4;
const breakBytes = (depth: number) => 1 + INDENT_BYTES * depth;

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
 * The size in bytes of the largest JSON text of a value `schema` accepts, in any encoding a JSON
 * serialiser writes (every character escaped, pretty-printed), or Infinity when the schema sets no
 * bound (a string without maxLength, an array without maxItems, an open object). `depth` is the
 * value's nesting level, which its members' indentation depends on.
 */
export function largestJsonBytes(schema: Schema, depth = 0): number {
  if (schema.const !== undefined) return JSON.stringify(schema.const).length * BYTES_PER_CHAR;
  if (schema.enum) return Math.max(...schema.enum.map((v) => JSON.stringify(v).length * BYTES_PER_CHAR));
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return Math.max(...alternatives.map((s) => largestJsonBytes(s, depth)));
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  return Math.max(...types.map((type) => largestOfType(schema, type, depth)));
}

function largestOfType(schema: Schema, type: string | undefined, depth: number): number {
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
    case 'array': {
      if (schema.maxItems === undefined || !schema.items) return Infinity;
      // `[`, each element after its line break and with its comma, the closing line break and `]`
      const element = breakBytes(depth + 1) + largestJsonBytes(schema.items, depth + 1) + 1;
      return 2 + schema.maxItems * element + breakBytes(depth);
    }
    case 'object': {
      if (schema.additionalProperties !== false) return Infinity;
      let bytes = 2 + breakBytes(depth);
      for (const [key, value] of Object.entries(schema.properties ?? {})) {
        // line break and indentation, the escaped name in quotes, `": "`, the value, `,`
        bytes += breakBytes(depth + 1) + 2 + key.length * BYTES_PER_NAME_CHAR + 2 + largestJsonBytes(value, depth + 1) + 1;
      }
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
