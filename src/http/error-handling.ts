// Every failure in the one error shape (errors.ts): validation, Fastify's and Node's errors, full disk, outage.
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isDatabasePanic, isDatabaseUnavailable, isStorageFull } from '../db/errors.ts';
import type { StorageState } from '../db/storage.ts';
import { AppError, bodyOf, ErrorBody, sendError, type ErrorCode, type ValidationIssue } from './errors.ts';

// An ESM import of node:http reads every export, whose lazy getters load fetch, TLS, HTTP/2 and zlib.
const { STATUS_CODES } = createRequire(import.meta.url)('node:http') as { STATUS_CODES: Record<number, string | undefined> };

/** Ajv's errors as FastAPI-style issues: `loc` is the schema part, then the instancePath ('/items/0/quantity'). */
function validationError(code: 'VALIDATION_ERROR' | 'INVALID_INPUT', err: FastifyError): AppError {
  const part = err.validationContext ?? 'body';
  const issues = (err.validation ?? []).map((v): ValidationIssue => {
    const loc = [part, ...v.instancePath.split('/').filter(Boolean).map((seg) => (/^\d+$/.test(seg) ? Number(seg) : seg))];
    const params = v.params as Record<string, unknown>;
    if (v.keyword === 'required' && typeof params.missingProperty === 'string') loc.push(params.missingProperty);
    if (v.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') {
      return { loc: [...loc, params.additionalProperty], msg: 'unknown field is not allowed', type: 'extra_forbidden' };
    }
    if (v.keyword === 'required') return { loc, msg: 'field required', type: 'missing' };
    return { loc, msg: v.message ?? 'invalid value', type: v.keyword };
  });
  const [first] = issues;
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
  return new AppError(code, first ? `Validation failed: ${first.loc.join('.')}: ${first.msg}${more}` : 'Request validation failed', { errors: issues });
}

/** PATCH /items answers body-validation failures with 400, not 422; non-body errors pass through. */
export function bodyValidationAsBadRequest(err: FastifyError): Error {
  return err.validation && err.validationContext === 'body' ? validationError('INVALID_INPUT', err) : err;
}

/** Fastify's errors whose status alone says too little. */
const FRAMEWORK_ERRORS: Record<string, [ErrorCode, string]> = {
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: ['BAD_REQUEST', 'Content-Length does not match the request body'],
  FST_ERR_CTP_INVALID_TYPE: ['VALIDATION_ERROR', 'Invalid content type'],
};

/** Maps Fastify's own errors (parser, body limit, validation…) onto the error vocabulary. */
function fromFrameworkError(err: FastifyError): AppError | undefined {
  if (err.validation) return validationError('VALIDATION_ERROR', err);
  if (err.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
    return new AppError('VALIDATION_ERROR', 'Malformed JSON in request body', { errors: [{ loc: ['body'], msg: err.message, type: 'json_invalid' }] });
  }
  const known = FRAMEWORK_ERRORS[err.code];
  if (known) return new AppError(...known);
  if (err instanceof SyntaxError || err.name === 'SyntaxError') return new AppError('VALIDATION_ERROR', 'Malformed request body');
  // the body limit's and the media type's errors carry 413 and 415
  const status = err.statusCode ?? 500;
  if (status === 413) return new AppError('PAYLOAD_TOO_LARGE', 'Request body is too large');
  if (status === 415) return new AppError('UNSUPPORTED_MEDIA_TYPE', 'Unsupported content type; send application/json');
  if (status === 408) return new AppError('REQUEST_TIMEOUT', 'Request timed out');
  if (status === 429) return new AppError('RATE_LIMITED', 'Rate limit exceeded');
  if (status >= 400 && status < 500) return new AppError('BAD_REQUEST', 'Bad request');
  return undefined;
}

/** Fastify's refusals of a URL: what is wrong, the issue's `msg` and `type`. */
const URL_ERRORS: Record<string, [string, string, string]> = {
  FST_ERR_BAD_URL: ['the URL is not validly percent-encoded', 'malformed percent-encoding', 'url_invalid'],
  FST_ERR_MAX_PARAM_LENGTH: ['a path parameter is too long', 'path parameter too long', 'string_too_long'],
};

/** The `frameworkErrors` server option: errors Fastify raises before routing, in the same error shape. */
export function frameworkErrors(err: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  const url = URL_ERRORS[err.code];
  if (!url) reply.log.error({ err }, 'framework error');
  const error = url
    ? new AppError('VALIDATION_ERROR', `Validation failed: ${url[0]}`, { errors: [{ loc: ['path'], msg: url[1], type: url[2] }] })
    : new AppError('INTERNAL_ERROR', 'Internal server error');
  void sendError(reply, error);
}

/** Node's HTTP parser errors, which no route ever sees, in the error vocabulary. */
const CLIENT_ERRORS: Record<string, [ErrorCode, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: ['REQUEST_TIMEOUT', 'Request timed out'],
  HPE_HEADER_OVERFLOW: ['HEADERS_TOO_LARGE', 'Request headers are too large'],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: ['PAYLOAD_TOO_LARGE', 'Request body is too large'],
};

/** The `clientErrorHandler` server option: Node's refusals, then the connection closes (the rest of the stream is untrustworthy). */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  // a reset connection has no one left to answer
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable) {
    const error = new AppError(...(CLIENT_ERRORS[err.code ?? ''] ?? ['BAD_REQUEST', 'Malformed HTTP request']));
    const body = JSON.stringify(bodyOf(error));
    socket.write(
      `HTTP/1.1 ${error.statusCode} ${STATUS_CODES[error.statusCode]}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Cache-Control: no-store\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/** The methods the routes at `path` answer; OPTIONS alone (the CORS preflight, on every path) does not count. */
function allowedMethods(app: FastifyInstance, path: string): string[] {
  const allowed = METHODS.filter((method) => app.findRoute({ method, url: path }) !== null);
  return allowed.some((m) => m !== 'OPTIONS') ? allowed : [];
}

// 30 s: an operator has to free space first
const storageFull = () =>
  new AppError('STORAGE_FULL', 'The service cannot store anything right now: its disk is full. Reads still work; retry later', {
    headers: { 'retry-after': '30' },
  });

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** With `storage`, a write gets 503 `STORAGE_FULL` after auth and validation while PGlite's disk is under its reserve, as does a disk-full error. */
export function registerErrorHandling(
  app: FastifyInstance,
  opts: { storage?: StorageState; databaseOutage?: { failed(err: unknown, source: string): void } } = {},
): void {
  app.addSchema(ErrorBody);
  const { storage } = opts;
  if (storage) {
    app.addHook('preHandler', async (request) => {
      if (READ_METHODS.has(request.method)) return;
      try {
        storage.assertRoomToWrite();
      } catch (err) {
        request.log.warn({ err }, 'write refused: the disk is full');
        throw storageFull();
      }
    });
  }

  app.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof AppError) return sendError(reply, err);
    const mapped = fromFrameworkError(err);
    if (mapped) return sendError(reply, mapped);
    if (isStorageFull(err)) {
      storage?.noteError(err);
      request.log.error({ err }, 'database disk full');
      return sendError(reply, storageFull());
    }
    if (isDatabaseUnavailable(err) || isDatabasePanic(err)) {
      // one line per outage, not per request
      if (opts.databaseOutage) opts.databaseOutage.failed(err, 'request');
      else request.log.error({ err }, 'database unavailable');
      return sendError(reply, new AppError('SERVICE_UNAVAILABLE', 'Service temporarily unavailable', { headers: { 'retry-after': '5' } }));
    }
    // Unknown: log everything, tell the client nothing about internals.
    request.log.error({ err }, 'unhandled error');
    return sendError(reply, new AppError('INTERNAL_ERROR', 'Internal server error'));
  });

  const notFound = (request: FastifyRequest): AppError => {
    const path = request.url.split('?')[0];
    const allowed = allowedMethods(app, path);
    if (allowed.length > 0) {
      return new AppError('METHOD_NOT_ALLOWED', `Method ${request.method} is not allowed on ${path}`, { headers: { allow: allowed.join(', ') } });
    }
    return new AppError('NOT_FOUND', `Route ${request.method} ${path} not found`);
  };
  // an unknown path or method is answered before body parsing (whose faults would win), after rate limiting
  app.addHook('preParsing', (request, reply, payload, done) => {
    if (request.is404) void sendError(reply, notFound(request));
    else done(null, payload);
  });
  app.setNotFoundHandler((request, reply) => sendError(reply, notFound(request)));
}
