import { Ajv, type Options } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance } from 'fastify';

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
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? bodyAjv : textAjv).compile(schema));
}
