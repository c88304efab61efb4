import type { FastifyInstance } from 'fastify';

/** A route that takes no body still gets this much (an empty object, a stray newline). */
export const MIN_BODY_LIMIT = 1024;

/** Bytes of the longest JSON number text (`-1.2345678901234567e-308`). */
const NUMBER_BYTES = 24;
/** Bytes of a code point as sent: an astral one escaped as a surrogate pair (`\uD83D\uDE00`) takes 12. */
const BYTES_PER_CHAR = 12;
/** Bytes of a property name's character escaped (`\u0069`): names are ASCII. */
const BYTES_PER_NAME_CHAR = 6;
/** A pretty-printer's line break and indentation, up to four spaces a level (Python's `indent=4`). */
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

/** The bytes of the largest JSON text (escaped, pretty-printed) `schema` accepts at nesting `depth`; Infinity if unbounded. */
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

/** Each route without its own `bodyLimit` reads at most its largest valid body in whole KiB, within MIN_BODY_LIMIT..`maxBytes`. */
export function registerBodyLimits(app: FastifyInstance, opts: { maxBytes: number }): void {
  app.addHook('onRoute', (route) => {
    if (route.bodyLimit !== undefined) return;
    const body = route.schema?.body as Schema | undefined;
    const largest = body ? largestJsonBytes(body) : 0;
    route.bodyLimit = Math.min(opts.maxBytes, Math.max(MIN_BODY_LIMIT, Math.ceil(largest / 1024) * 1024));
  });
}
