import type { FastifyReply } from 'fastify';
import { Type, type Static } from 'typebox';

/** The one error vocabulary: every code maps to exactly one HTTP status, here and nowhere else. */
export const ERROR_STATUS = {
  VALIDATION_ERROR: 422,
  BAD_REQUEST: 400,
  INVALID_INPUT: 400,
  NOT_AUTHENTICATED: 401,
  INVALID_CREDENTIALS: 401,
  INVALID_TOKEN: 401,
  INVALID_SIGNATURE: 401,
  INACTIVE_USER: 403,
  FORBIDDEN: 403,
  ADMIN_REQUIRED: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  EMAIL_EXISTS: 400,
  SKU_EXISTS: 400,
  INVALID_PRODUCT: 400,
  INVALID_QUANTITY: 400,
  INVALID_STATE: 400,
  ORDER_NOT_CANCELLABLE: 400,
  SUBSCRIPTION_LIMIT_REACHED: 400,
  SUBSCRIPTION_URL_EXISTS: 400,
  INVALID_RESET_TOKEN: 400,
  RESET_TOKEN_USED: 400,
  RESET_TOKEN_EXPIRED: 400,
  RESET_TOKEN_SUPERSEDED: 400,
  INVALID_EMAIL_TOKEN: 400,
  EMAIL_TOKEN_USED: 400,
  EMAIL_TOKEN_EXPIRED: 400,
  IDEMPOTENCY_KEY_REUSED: 422,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  LOGIN_THROTTLED: 429,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
  STORAGE_FULL: 503,
  WEBHOOK_NOT_CONFIGURED: 503,
  REQUEST_TIMEOUT: 408,
  HEADERS_TOO_LARGE: 431,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

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
    errors: Type.Optional(
      Type.Array(
        Type.Object({
          loc: Type.Array(Type.Union([Type.String(), Type.Integer()])),
          msg: Type.String(),
          type: Type.String(),
        }),
      ),
    ),
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
