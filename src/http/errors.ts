import type { FastifyReply } from 'fastify';
import { Type, type Static } from 'typebox';

/** Deeper than any valid body of the API (an order is three levels: body, lines, line). */
export const MAX_JSON_DEPTH = 32;

interface ErrorKind {
  status: number;
  /** what the code means, in a few words (the example's name in Swagger UI's list) */
  summary: string;
  detail: string;
  errors?: ValidationIssue[];
}

/** The one error vocabulary: each code's HTTP status (here and nowhere else) and its example in the OpenAPI documents. */
export const ERRORS = {
  VALIDATION_ERROR: {
    status: 422,
    summary: 'the request does not match the schema',
    detail: 'Validation failed: body.items.0.product_id: field required',
    errors: [{ loc: ['body', 'items', 0, 'product_id'], msg: 'field required', type: 'missing' }],
  },
  BAD_REQUEST: { status: 400, summary: 'a body nested too deep', detail: `Request body is nested more than ${MAX_JSON_DEPTH} levels deep` },
  INVALID_INPUT: {
    status: 400,
    summary: 'the body does not match the schema',
    detail: 'Validation failed: body.price: must be > 0',
    errors: [{ loc: ['body', 'price'], msg: 'must be > 0', type: 'exclusiveMinimum' }],
  },
  NOT_AUTHENTICATED: { status: 401, summary: 'no bearer token', detail: 'Not authenticated' },
  INVALID_CREDENTIALS: { status: 401, summary: 'wrong e-mail or password', detail: 'Incorrect email or password' },
  INVALID_TOKEN: { status: 401, summary: 'an invalid, expired or revoked token', detail: 'Could not validate credentials' },
  INVALID_SIGNATURE: { status: 401, summary: 'a missing or wrong signature', detail: 'Invalid webhook signature' },
  INACTIVE_USER: { status: 403, summary: 'the account is inactive', detail: 'Inactive user' },
  FORBIDDEN: { status: 403, summary: "another user's resource", detail: 'Not enough permissions to access this resource' },
  ADMIN_REQUIRED: { status: 403, summary: 'not an administrator', detail: 'Administrator privileges required' },
  NOT_FOUND: { status: 404, summary: 'no such resource', detail: 'Not found' },
  METHOD_NOT_ALLOWED: { status: 405, summary: 'the path does not take this method', detail: 'Method PUT is not allowed on /api/v1/orders' },
  EMAIL_EXISTS: { status: 400, summary: 'the e-mail address is taken', detail: 'Email already registered' },
  SKU_EXISTS: { status: 400, summary: 'the SKU is taken', detail: 'SKU already exists' },
  INVALID_PRODUCT: { status: 400, summary: 'no such active product', detail: 'Invalid product id 999: no such active product' },
  INVALID_QUANTITY: { status: 400, summary: 'a quantity outside 1 to 1000', detail: 'Invalid quantity 0 for product 1: must be between 1 and 1000' },
  INVALID_STATE: { status: 400, summary: 'not possible in its current state', detail: 'Subscription is disabled; enable it before sending a test event' },
  ORDER_NOT_CANCELLABLE: {
    status: 400,
    summary: 'already failed or cancelled',
    detail: 'Only pending, processing or completed orders can be cancelled; this order is failed',
  },
  SUBSCRIPTION_LIMIT_REACHED: {
    status: 400,
    summary: 'too many subscriptions',
    detail: 'A user may have at most 25 webhook subscriptions; delete one you no longer use',
  },
  SUBSCRIPTION_URL_EXISTS: { status: 400, summary: 'already subscribed to this URL', detail: 'You already have a subscription to this URL (subscription 1)' },
  INVALID_RESET_TOKEN: { status: 400, summary: 'an unknown token', detail: 'Invalid password reset token' },
  RESET_TOKEN_USED: { status: 400, summary: 'the token was used', detail: 'This password reset token has already been used' },
  RESET_TOKEN_EXPIRED: { status: 400, summary: 'the token expired', detail: 'This password reset token has expired; request a new one' },
  RESET_TOKEN_SUPERSEDED: {
    status: 400,
    summary: 'a newer token exists, or the account changed',
    detail:
      'This password reset token is no longer valid: a newer one was requested, or the account changed since; use the latest e-mail or request a new one',
  },
  INVALID_EMAIL_TOKEN: {
    status: 400,
    summary: 'an unknown token, or the address changed since',
    detail: 'Invalid e-mail confirmation token, or the account no longer has this address',
  },
  EMAIL_TOKEN_USED: { status: 400, summary: 'the token was used', detail: 'This e-mail link has already been used' },
  EMAIL_TOKEN_EXPIRED: { status: 400, summary: 'the token expired', detail: 'This e-mail link has expired' },
  IDEMPOTENCY_KEY_REUSED: {
    status: 422,
    summary: 'the key was used with another body',
    detail: 'Idempotency-Key has already been used with a different request body',
  },
  PAYLOAD_TOO_LARGE: { status: 413, summary: "a body over the route's limit", detail: 'Request body is too large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, summary: 'a body that is not JSON', detail: 'Unsupported content type; send application/json' },
  RATE_LIMITED: { status: 429, summary: 'too many requests in the window', detail: 'Rate limit exceeded, retry in 42 seconds' },
  LOGIN_THROTTLED: {
    status: 429,
    summary: 'too many failed sign-ins for the e-mail',
    detail: 'Too many failed sign-in attempts for this e-mail address; retry in 60 seconds',
  },
  INTERNAL_ERROR: { status: 500, summary: 'an unexpected error', detail: 'Internal server error' },
  SERVICE_UNAVAILABLE: { status: 503, summary: 'the database is unreachable', detail: 'Service temporarily unavailable' },
  STORAGE_FULL: {
    status: 503,
    summary: "the database's disk is full",
    detail: 'The service cannot store anything right now: its disk is full. Reads still work; retry later',
  },
  WEBHOOK_NOT_CONFIGURED: { status: 503, summary: 'no webhook secret is set', detail: 'Inbound webhooks are not configured on this server' },
  REQUEST_TIMEOUT: { status: 408, summary: 'the request came too slowly', detail: 'Request timed out' },
  HEADERS_TOO_LARGE: { status: 431, summary: 'headers over the limit', detail: 'Request headers are too large' },
} satisfies Record<string, ErrorKind>;

export type ErrorCode = keyof typeof ERRORS;
export const ERROR_STATUS = Object.fromEntries(Object.entries(ERRORS).map(([code, e]) => [code, e.status])) as Record<ErrorCode, number>;

const ValidationIssue = Type.Object({
  loc: Type.Array(Type.Union([Type.String(), Type.Integer()])),
  msg: Type.String(),
  type: Type.String(),
});
export type ValidationIssue = Static<typeof ValidationIssue>;

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly errors: ValidationIssue[] | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(code: ErrorCode, detail: string, opts: { errors?: ValidationIssue[]; headers?: Record<string, string> } = {}) {
    super(detail);
    this.name = 'AppError';
    this.code = code;
    this.statusCode = ERROR_STATUS[code];
    this.errors = opts.errors;
    this.headers = opts.headers;
  }
}

export const ErrorBody = Type.Object(
  {
    detail: Type.String(),
    error_code: Type.String({ enum: Object.keys(ERROR_STATUS) }),
    errors: Type.Optional(Type.Array(ValidationIssue)),
  },
  { $id: 'ErrorBody', description: 'Every error has this shape; 422 adds `errors`.' },
);
export type ErrorBody = Static<typeof ErrorBody>;

/** The 422 of a query parameter that passed its schema but not a rule between values (`to` before `from`). */
export function invalidQuery(field: string, msg: string): AppError {
  return new AppError('VALIDATION_ERROR', `Validation failed: querystring.${field}: ${msg}`, {
    errors: [{ loc: ['querystring', field], msg, type: 'value_error' }],
  });
}

/** Response-schema entries for the error statuses a route can return. */
export function errorResponses(...statuses: number[]): Record<number, unknown> {
  return Object.fromEntries(statuses.map((s) => [s, Type.Ref('ErrorBody')]));
}

export function bodyOf(err: AppError): ErrorBody {
  return { detail: err.message, error_code: err.code, ...(err.errors ? { errors: err.errors } : {}) };
}

export function sendError(reply: FastifyReply, err: AppError): FastifyReply {
  if (err.headers) void reply.headers(err.headers);
  return reply.code(err.statusCode).type('application/json; charset=utf-8').send(bodyOf(err));
}
