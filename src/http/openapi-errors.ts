import { ERROR_STATUS, type ErrorCode, type ValidationIssue } from './errors.ts';
import { MAX_JSON_DEPTH } from './validation.ts';

// The OpenAPI documents' error answers: per operation and status, its codes and an example body of each.

interface ErrorExample {
  /** what the code means here, in a few words (the example's name in Swagger UI's list) */
  summary: string;
  detail: string;
  errors?: ValidationIssue[];
}

/** One example of every code, as the service answers it where no route says otherwise. */
const EXAMPLES: Record<ErrorCode, ErrorExample> = {
  VALIDATION_ERROR: {
    summary: 'the request does not match the schema',
    detail: 'Validation failed: body.items.0.product_id: field required',
    errors: [{ loc: ['body', 'items', 0, 'product_id'], msg: 'field required', type: 'missing' }],
  },
  BAD_REQUEST: { summary: 'a body nested too deep', detail: `Request body is nested more than ${MAX_JSON_DEPTH} levels deep` },
  INVALID_INPUT: {
    summary: 'the body does not match the schema',
    detail: 'Validation failed: body.price: must be > 0',
    errors: [{ loc: ['body', 'price'], msg: 'must be > 0', type: 'exclusiveMinimum' }],
  },
  NOT_AUTHENTICATED: { summary: 'no bearer token', detail: 'Not authenticated' },
  INVALID_CREDENTIALS: { summary: 'wrong e-mail or password', detail: 'Incorrect email or password' },
  INVALID_TOKEN: { summary: 'an invalid, expired or revoked token', detail: 'Could not validate credentials' },
  INVALID_SIGNATURE: { summary: 'a missing or wrong signature', detail: 'Invalid webhook signature' },
  INACTIVE_USER: { summary: 'the account is inactive', detail: 'Inactive user' },
  FORBIDDEN: { summary: "another user's resource", detail: 'Not enough permissions to access this resource' },
  ADMIN_REQUIRED: { summary: 'not an administrator', detail: 'Administrator privileges required' },
  NOT_FOUND: { summary: 'no such resource', detail: 'Not found' },
  METHOD_NOT_ALLOWED: { summary: 'the path does not take this method', detail: 'Method PUT is not allowed on /api/v1/orders' },
  EMAIL_EXISTS: { summary: 'the e-mail address is taken', detail: 'Email already registered' },
  SKU_EXISTS: { summary: 'the SKU is taken', detail: 'SKU already exists' },
  INVALID_PRODUCT: { summary: 'no such active product', detail: 'Invalid product id 999: no such active product' },
  INVALID_QUANTITY: { summary: 'a quantity outside 1 to 1000', detail: 'Invalid quantity 0 for product 1: must be between 1 and 1000' },
  INVALID_STATE: { summary: 'not possible in its current state', detail: 'Subscription is disabled; enable it before sending a test event' },
  ORDER_NOT_CANCELLABLE: {
    summary: 'already failed or cancelled',
    detail: 'Only pending, processing or completed orders can be cancelled; this order is failed',
  },
  SUBSCRIPTION_LIMIT_REACHED: {
    summary: 'too many subscriptions',
    detail: 'A user may have at most 25 webhook subscriptions; delete one you no longer use',
  },
  SUBSCRIPTION_URL_EXISTS: { summary: 'already subscribed to this URL', detail: 'You already have a subscription to this URL (subscription 1)' },
  INVALID_RESET_TOKEN: { summary: 'an unknown token', detail: 'Invalid password reset token' },
  RESET_TOKEN_USED: { summary: 'the token was used', detail: 'This password reset token has already been used' },
  RESET_TOKEN_EXPIRED: { summary: 'the token expired', detail: 'This password reset token has expired; request a new one' },
  RESET_TOKEN_SUPERSEDED: {
    summary: 'a newer token exists, or the account changed',
    detail:
      'This password reset token is no longer valid: a newer one was requested, or the account changed since; use the latest e-mail or request a new one',
  },
  INVALID_EMAIL_TOKEN: {
    summary: 'an unknown token, or the address changed since',
    detail: 'Invalid e-mail confirmation token, or the account no longer has this address',
  },
  EMAIL_TOKEN_USED: { summary: 'the token was used', detail: 'This e-mail link has already been used' },
  EMAIL_TOKEN_EXPIRED: { summary: 'the token expired', detail: 'This e-mail link has expired' },
  IDEMPOTENCY_KEY_REUSED: {
    summary: 'the key was used with another body',
    detail: 'Idempotency-Key has already been used with a different request body',
  },
  PAYLOAD_TOO_LARGE: { summary: "a body over the route's limit", detail: 'Request body is too large' },
  UNSUPPORTED_MEDIA_TYPE: { summary: 'a body that is not JSON', detail: 'Unsupported content type; send application/json' },
  RATE_LIMITED: { summary: 'too many requests in the window', detail: 'Rate limit exceeded, retry in 42 seconds' },
  LOGIN_THROTTLED: {
    summary: 'too many failed sign-ins for the e-mail',
    detail: 'Too many failed sign-in attempts for this e-mail address; retry in 60 seconds',
  },
  INTERNAL_ERROR: { summary: 'an unexpected error', detail: 'Internal server error' },
  SERVICE_UNAVAILABLE: { summary: 'the database is unreachable', detail: 'Service temporarily unavailable' },
  STORAGE_FULL: {
    summary: "the database's disk is full",
    detail: 'The service cannot store anything right now: its disk is full. Reads still work; retry later',
  },
  WEBHOOK_NOT_CONFIGURED: { summary: 'no webhook secret is set', detail: 'Inbound webhooks are not configured on this server' },
  REQUEST_TIMEOUT: { summary: 'the request came too slowly', detail: 'Request timed out' },
  HEADERS_TOO_LARGE: { summary: 'headers over the limit', detail: 'Request headers are too large' },
};

/** A code an operation answers, with its detail there when the default example's is not it. */
export type RouteCode = ErrorCode | { code: ErrorCode; detail: string };

const forbidden = (resource: string): RouteCode => ({ code: 'FORBIDDEN', detail: `Not enough permissions to access this ${resource}` });
const disabled = (action: string): RouteCode => ({ code: 'INVALID_STATE', detail: `Subscription is disabled; enable it before ${action}` });
const subscription = forbidden('subscription');

/** The codes each operation answers beyond those of its kind (errorCodesOf), by method and unprefixed path. */
export const ROUTE_CODES: Readonly<Record<string, readonly RouteCode[]>> = {
  'POST /auth/login': ['INVALID_CREDENTIALS', 'INACTIVE_USER', 'LOGIN_THROTTLED'],
  'POST /auth/refresh': ['INVALID_TOKEN'],
  'POST /auth/logout': ['INVALID_TOKEN'],
  'POST /auth/password': [{ code: 'INVALID_CREDENTIALS', detail: 'Current password is incorrect' }],
  'POST /auth/reset-password': ['INVALID_RESET_TOKEN', 'RESET_TOKEN_USED', 'RESET_TOKEN_EXPIRED', 'RESET_TOKEN_SUPERSEDED'],
  'POST /auth/verify-email': ['INVALID_EMAIL_TOKEN', 'EMAIL_TOKEN_USED', 'EMAIL_TOKEN_EXPIRED', { code: 'EMAIL_EXISTS', detail: 'Email already in use by another account' }],
  'POST /auth/email-change/revert': [
    { code: 'INVALID_EMAIL_TOKEN', detail: 'Invalid e-mail change revert token' },
    'EMAIL_TOKEN_USED',
    'EMAIL_TOKEN_EXPIRED',
    { code: 'EMAIL_EXISTS', detail: 'Email already in use by another account' },
  ],
  'POST /users': ['EMAIL_EXISTS'],
  'PATCH /users/{user_id}': [
    { code: 'EMAIL_EXISTS', detail: 'Email already in use' },
    { code: 'INVALID_CREDENTIALS', detail: 'Current password is incorrect' },
    { code: 'FORBIDDEN', detail: 'Not enough permissions to update this user' },
  ],
  'DELETE /users/{user_id}': [{ code: 'FORBIDDEN', detail: 'Administrators cannot delete their own account' }],
  'POST /products': ['SKU_EXISTS'],
  'PATCH /products/{product_id}': ['SKU_EXISTS'],
  'POST /orders': ['INVALID_PRODUCT', 'INVALID_QUANTITY', 'IDEMPOTENCY_KEY_REUSED'],
  'GET /orders/{order_id}': [forbidden('order')],
  'GET /orders/{order_id}/events': [forbidden('order')],
  'POST /orders/{order_id}/retry': [{ code: 'INVALID_STATE', detail: 'Only failed orders can be retried; this order is completed' }, forbidden('order')],
  'POST /orders/{order_id}/cancel': ['ORDER_NOT_CANCELLABLE', forbidden('order')],
  'GET /items/{item_id}': [forbidden('item')],
  'PATCH /items/{item_id}': ['INVALID_INPUT', forbidden('item')],
  'DELETE /items/{item_id}': [forbidden('item')],
  'POST /webhooks/orders/create': ['INVALID_SIGNATURE', 'WEBHOOK_NOT_CONFIGURED'],
  'POST /webhooks/orders/cancelled': ['INVALID_SIGNATURE', 'WEBHOOK_NOT_CONFIGURED'],
  'POST /admin/inbound-webhooks/{id}/reprocess': [
    { code: 'INVALID_STATE', detail: 'The payload of this webhook was removed by the retention purge; it cannot be processed again' },
  ],
  'POST /webhooks/subscriptions': ['SUBSCRIPTION_LIMIT_REACHED', 'SUBSCRIPTION_URL_EXISTS'],
  'GET /webhooks/subscriptions/{subscription_id}': [subscription],
  'PATCH /webhooks/subscriptions/{subscription_id}': ['SUBSCRIPTION_URL_EXISTS', subscription],
  'DELETE /webhooks/subscriptions/{subscription_id}': [subscription],
  'GET /webhooks/subscriptions/{subscription_id}/deliveries': [subscription],
  'GET /webhooks/subscriptions/{subscription_id}/messages/{message_id}': [subscription],
  'POST /webhooks/subscriptions/{subscription_id}/messages/{message_id}/resend': [
    { code: 'INVALID_STATE', detail: 'Message is still pending: it is being delivered or waits for an earlier message of its order' },
    subscription,
  ],
  'POST /webhooks/subscriptions/{subscription_id}/recover': [disabled('recovering its messages'), subscription],
  'POST /webhooks/subscriptions/{subscription_id}/test': [disabled('sending a test event'), subscription],
  'POST /webhooks/subscriptions/{subscription_id}/rotate-secret': [subscription],
};

/** What kind of operation it is, for the codes every operation of that kind answers. */
export interface OperationKind {
  /** a bearer token is required (401 without one, 403 for an inactive account) */
  secured: boolean;
  /** an administrator's route: the 403 of anyone else, with this detail */
  adminDetail: string | undefined;
  /** the body is parsed as JSON (or a form): too large, nested too deep, not JSON, malformed */
  readsJsonBody: boolean;
  /** counted by the rate limiter */
  rateLimited: boolean;
  /** the resource of its last path id, for the 404 (`Order`) */
  resource: string | undefined;
  /** it reads or writes the database (503 while the database is unreachable) */
  usesDatabase: boolean;
  /** it may write to the database (503 `STORAGE_FULL` while its disk is full) */
  writes: boolean;
}

const entry = (code: ErrorCode, detail?: string) => ({ code, detail: detail ?? EXAMPLES[code].detail });

/** Every code `kind` and `routeCodes` make possible, each with the detail to show. */
export function errorCodesOf(kind: OperationKind, routeCodes: readonly RouteCode[] = []): { code: ErrorCode; detail: string }[] {
  const codes = [
    ...routeCodes.map((c) => (typeof c === 'string' ? entry(c) : entry(c.code, c.detail))),
    ...(kind.secured ? [entry('NOT_AUTHENTICATED'), entry('INVALID_TOKEN'), entry('INACTIVE_USER')] : []),
    ...(kind.adminDetail !== undefined ? [entry('ADMIN_REQUIRED', kind.adminDetail)] : []),
    ...(kind.readsJsonBody ? [entry('BAD_REQUEST'), entry('PAYLOAD_TOO_LARGE'), entry('UNSUPPORTED_MEDIA_TYPE')] : []),
    ...(kind.rateLimited ? [entry('RATE_LIMITED')] : []),
    ...(kind.resource !== undefined ? [entry('NOT_FOUND', `${kind.resource} not found`)] : []),
    ...(kind.usesDatabase ? [entry('SERVICE_UNAVAILABLE')] : []),
    ...(kind.writes ? [entry('STORAGE_FULL')] : []),
  ];
  // the first entry of a code wins: the route's own detail over the general one
  return codes.filter((c, i) => codes.findIndex((d) => d.code === c.code) === i);
}

/** What each error status means, before the list of its codes. */
const STATUS_TITLES: Record<number, string> = {
  400: 'Bad request',
  401: 'Not authenticated',
  403: 'Forbidden',
  404: 'Not found',
  413: "Payload too large: the body is over this route's limit, which fits its largest valid body in any encoding (characters escaped, pretty-printed)",
  415: 'Unsupported media type: send `application/json`',
  422: 'Unprocessable: the request does not match the schema, or a string in it (a key too) holds a NUL character (U+0000) or an unpaired surrogate; `errors` lists each problem',
  429: 'Too many requests: retry after `Retry-After` seconds',
  500: 'Internal error',
  503: 'Service unavailable: retry after `Retry-After` seconds',
};

/** The code a status carries when nothing more specific is known of an operation. */
const STATUS_DEFAULT: Record<number, ErrorCode> = {
  400: 'BAD_REQUEST',
  401: 'NOT_AUTHENTICATED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  422: 'VALIDATION_ERROR',
  429: 'RATE_LIMITED',
  500: 'INTERNAL_ERROR',
  503: 'SERVICE_UNAVAILABLE',
};

/** The description and the examples of error status `status`, among the operation's `codes`. */
export function errorAnswer(status: number, codes: readonly { code: ErrorCode; detail: string }[]): { description: string; examples: Record<string, unknown> } {
  let mine = codes.filter((c) => ERROR_STATUS[c.code] === status);
  // a 422 is always possible from the schemas, whatever else the route answers with it
  if (status === 422 && !mine.some((c) => c.code === 'VALIDATION_ERROR')) mine = [entry('VALIDATION_ERROR'), ...mine];
  if (mine.length === 0 && STATUS_DEFAULT[status] !== undefined) mine = [entry(STATUS_DEFAULT[status])];
  const title = STATUS_TITLES[status] ?? `Error ${status}`;
  const examples: Record<string, unknown> = {};
  for (const { code, detail } of mine) {
    const { summary, errors } = EXAMPLES[code];
    examples[code] = { summary, value: { detail, error_code: code, ...(errors ? { errors } : {}) } };
  }
  return { description: `${title} (${mine.map((c) => `\`${c.code}\``).join(', ')})`, examples };
}

/** The error statuses every operation of `kind` can answer, and those its route codes add. */
export function errorStatusesOf(codes: readonly { code: ErrorCode }[], kind: OperationKind): number[] {
  const statuses = new Set(codes.map((c) => ERROR_STATUS[c.code]));
  if (kind.readsJsonBody) statuses.add(422); // malformed JSON, whatever the route's schema
  return [...statuses];
}
