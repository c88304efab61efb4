import { RULE_BOUNDS } from './common.schemas.ts';
import { ERROR_STATUS, ERRORS, type ErrorCode, type ValidationIssue } from './errors.ts';
import { withTryItNotes } from './openapi-try-it.ts';
import { RESOURCES } from './path-ids.ts';
import type { RouteInfo } from './security.ts';

interface OpenApiResponse {
  description?: string;
  headers?: Record<string, unknown>;
  content?: Record<string, { schema?: { $ref?: string }; examples?: Record<string, unknown> }>;
}
interface OpenApiOperation {
  tags?: string[];
  description?: string;
  parameters?: { in: string; name: string; required?: boolean; schema?: { default?: unknown } }[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: { anyOf?: { type?: unknown }[] } }> };
  security?: unknown[];
  responses?: Record<string, OpenApiResponse>;
}
export interface OpenApiDocument {
  tags?: { name: string; description: string }[];
  paths?: Record<string, Record<string, OpenApiOperation>>;
}

/** The routes' tags (short ids) as the documents name and describe them, in the order the pages list them. */
const TAGS: Readonly<Record<string, { name: string; description: string }>> = {
  auth: { name: 'Authentication', description: 'Sign in (the Authorize button does it for you), refresh and revoke tokens, change or recover a password' },
  users: { name: 'Users', description: 'Accounts: administrators create and delete them, everyone reads them and edits their own' },
  products: { name: 'Products', description: 'The catalogue orders are placed from, kept by administrators' },
  orders: { name: 'Orders', description: 'Place your orders and follow them while they are priced and their stock reserved in the background' },
  items: { name: 'Items', description: 'A collection of items of your own' },
  webhooks: { name: 'Webhooks', description: "Subscriptions to your orders' events, and the e-commerce platform's signed order webhooks" },
  admin: { name: 'Administration', description: "Every user's orders, the inbound webhooks and an order's trace, for administrators" },
  operations: { name: 'Operations', description: 'Liveness, readiness and metrics of the running service' },
};

const SUCCESS_TEXT: Record<string, string> = { 200: 'OK', 201: 'Created', 202: 'Accepted', 204: 'No Content' };
const ERROR_BODY = '#/components/schemas/ErrorBody';
/** What a path's ids name, for the 404 example (the admin inbound-webhook routes call theirs `id`). */
const PATH_RESOURCES: Record<string, string> = { ...RESOURCES, message_id: 'Message', id: 'Inbound webhook' };
/** Methods whose body Fastify reads (DELETE too, when one is sent). */
const BODY_METHODS = new Set(['post', 'put', 'patch', 'delete']);

const integerHeader = (description: string) => ({ description, schema: { type: 'integer', minimum: 0 } });
const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': integerHeader('requests allowed in the window'),
  'X-RateLimit-Remaining': integerHeader('requests left in the window'),
  'X-RateLimit-Reset': integerHeader('seconds until the window resets'),
};
const RETRY_AFTER = { 'Retry-After': integerHeader('seconds to wait before trying again') };

/**
 * What route schemas cannot say: defaulted query parameters and `null`-admitting bodies are optional; every error
 * status with its codes and examples; Try-it notes (openapi-try-it.ts); status and tag names; rule bounds; rate-limit headers.
 */
export function refineDocument(doc: OpenApiDocument, routes: readonly RouteInfo[], prefix: string): void {
  const routeOf = new Map(routes.map((r) => [`${r.method.toLowerCase()} ${r.url.replace(/:(\w+)/g, '{$1}')}`, r]));
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(item)) {
      const route = routeOf.get(`${method} ${path}`);
      for (const p of op.parameters ?? []) {
        if (p.in !== 'path' && p.schema?.default !== undefined) delete p.required;
      }
      if (op.requestBody?.content?.['application/json']?.schema?.anyOf?.some((s) => s.type === 'null')) op.requestBody.required = false;
      op.tags = op.tags?.map((tag) => TAGS[tag]?.name ?? tag);
      const key = `${method.toUpperCase()} ${path.slice(prefix.length)}`;
      describeResponses(op, method, path, route, prefix, key);
      op.description = withTryItNotes(op.description, key);
      if (route && route.rateLimit !== 'none') {
        for (const [status, response] of Object.entries(op.responses ?? {})) {
          response.headers = { ...response.headers, ...RATE_LIMIT_HEADERS, ...(status === '429' ? RETRY_AFTER : {}) };
        }
      }
    }
  }
  const used = new Set(Object.values(doc.paths ?? {}).flatMap((item) => Object.values(item).flatMap((op) => op.tags ?? [])));
  doc.tags = Object.values(TAGS).filter((t) => used.has(t.name));
  applyRuleBounds(doc);
}

/** Every error status the operation can answer, each with its codes and an example of each; the success texts. */
function describeResponses(op: OpenApiOperation, method: string, path: string, route: RouteInfo | undefined, prefix: string, key: string): void {
  const resource = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).filter((name) => name in PATH_RESOURCES).at(-1);
  const api = path.startsWith(`${prefix}/`);
  // a signature-verified route keeps its body as raw bytes: no JSON parser, no nesting guard
  const readsJsonBody = BODY_METHODS.has(method) && route?.auth !== 'signature';
  const all = [
    ...(ROUTE_CODES[key] ?? []).map((c) => (typeof c === 'string' ? entry(c) : entry(c.code, c.detail))),
    ...((op.security?.length ?? 0) > 0 ? [entry('NOT_AUTHENTICATED'), entry('INVALID_TOKEN'), entry('INACTIVE_USER')] : []),
    ...(route?.auth === 'admin' ? [entry('ADMIN_REQUIRED', route.adminDetail ?? 'Administrator privileges required')] : []),
    ...(readsJsonBody ? [entry('BAD_REQUEST'), entry('PAYLOAD_TOO_LARGE'), entry('UNSUPPORTED_MEDIA_TYPE')] : []),
    ...(route !== undefined && route.rateLimit !== 'none' ? [entry('RATE_LIMITED')] : []),
    ...(resource !== undefined ? [entry('NOT_FOUND', `${PATH_RESOURCES[resource]} not found`)] : []),
    // the API's operations use the database (503 while it is unreachable), and its writes its disk
    ...(api ? [entry('SERVICE_UNAVAILABLE')] : []),
    ...(api && BODY_METHODS.has(method) ? [entry('STORAGE_FULL')] : []),
  ];
  // the first entry of a code wins: the route's own detail over the general one
  const codes = all.filter((c, i) => all.findIndex((d) => d.code === c.code) === i);
  const responses = (op.responses ??= {});
  for (const { code } of codes) responses[ERROR_STATUS[code]] ??= {};
  if (readsJsonBody) responses[422] ??= {}; // malformed JSON, whatever the route's schema
  for (const [status, response] of Object.entries(responses)) {
    if (SUCCESS_TEXT[status] && (response.description === undefined || response.description === 'Default Response')) {
      response.description = SUCCESS_TEXT[status];
    }
    const schema = response.content?.['application/json']?.schema;
    if (!/^[45]\d\d$/.test(status) || (schema !== undefined && schema.$ref !== ERROR_BODY)) continue;
    const { description, examples } = errorAnswer(Number(status), codes);
    response.description = description;
    response.content = { 'application/json': { schema: { $ref: ERROR_BODY }, examples } };
  }
  // statuses in numeric order, as a reader scans them
  op.responses = Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)));
}

/** Every schema object of the document (request bodies, parameters, components), rule bounds made minimum/maximum. */
function applyRuleBounds(node: unknown): void {
  if (node === null || typeof node !== 'object') return;
  const record = node as Record<string, unknown>;
  const bounds = record[RULE_BOUNDS] as { minimum: number; maximum: number } | undefined;
  if (bounds) {
    delete record[RULE_BOUNDS];
    record.minimum = bounds.minimum;
    record.maximum = bounds.maximum;
  }
  for (const child of Object.values(record)) applyRuleBounds(child);
}

// The OpenAPI documents' error answers: per operation and status, its codes and an example body of each.

/** A code an operation answers, with its detail there when the default example's is not it. */
type RouteCode = ErrorCode | { code: ErrorCode; detail: string };

const forbidden = (resource: string): RouteCode => ({ code: 'FORBIDDEN', detail: `Not enough permissions to access this ${resource}` });
const disabled = (action: string): RouteCode => ({ code: 'INVALID_STATE', detail: `Subscription is disabled; enable it before ${action}` });
const subscription = forbidden('subscription');

/** The codes each operation answers beyond those of its kind (describeResponses), by method and unprefixed path. */
const ROUTE_CODES: Readonly<Record<string, readonly RouteCode[]>> = {
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

const entry = (code: ErrorCode, detail?: string) => ({ code, detail: detail ?? ERRORS[code].detail });

/** What each error status means, before the list of its codes, and its code when nothing more specific is known. */
const STATUSES: Record<number, [title: string, code: ErrorCode]> = {
  400: ['Bad request', 'BAD_REQUEST'],
  401: ['Not authenticated', 'NOT_AUTHENTICATED'],
  403: ['Forbidden', 'FORBIDDEN'],
  404: ['Not found', 'NOT_FOUND'],
  413: [
    "Payload too large: the body is over this route's limit, which fits its largest valid body in any encoding (characters escaped, pretty-printed)",
    'PAYLOAD_TOO_LARGE',
  ],
  415: ['Unsupported media type: send `application/json`', 'UNSUPPORTED_MEDIA_TYPE'],
  422: [
    'Unprocessable: the request does not match the schema, or a string in it (a key too) holds a NUL character (U+0000) or an unpaired surrogate; `errors` lists each problem',
    'VALIDATION_ERROR',
  ],
  429: ['Too many requests: retry after `Retry-After` seconds', 'RATE_LIMITED'],
  500: ['Internal error', 'INTERNAL_ERROR'],
  503: ['Service unavailable: retry after `Retry-After` seconds', 'SERVICE_UNAVAILABLE'],
};

/** The description and the examples of error status `status`, among the operation's `codes`. */
function errorAnswer(status: number, codes: readonly { code: ErrorCode; detail: string }[]): { description: string; examples: Record<string, unknown> } {
  let mine = codes.filter((c) => ERROR_STATUS[c.code] === status);
  // a 422 is always possible from the schemas, whatever else the route answers with it
  if (status === 422 && !mine.some((c) => c.code === 'VALIDATION_ERROR')) mine = [entry('VALIDATION_ERROR'), ...mine];
  const [title, fallback] = STATUSES[status] ?? [`Error ${status}`];
  if (mine.length === 0 && fallback !== undefined) mine = [entry(fallback)];
  const examples: Record<string, unknown> = {};
  for (const { code, detail } of mine) {
    const { summary, errors }: { summary: string; errors?: ValidationIssue[] } = ERRORS[code];
    examples[code] = { summary, value: { detail, error_code: code, ...(errors ? { errors } : {}) } };
  }
  return { description: `${title} (${mine.map((c) => `\`${c.code}\``).join(', ')})`, examples };
}
