import { errorAnswer, errorCodesOf, errorStatusesOf, ROUTE_CODES, type OperationKind } from './openapi-errors.ts';
import { RULE_BOUNDS } from './common.schemas.ts';
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
  components?: { schemas?: Record<string, unknown> };
}

/** The routes' tags (short ids) as the documents name and describe them, in the order the pages list them. */
export const TAGS: Readonly<Record<string, { name: string; description: string }>> = {
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
 * What the route schemas cannot say by themselves: a query parameter with a default and a body that
 * admits `null` are optional; every error status the operation can answer, with its codes and
 * examples (openapi-errors.ts); what its example needs first (openapi-try-it.ts); status and tag
 * names; rule bounds; the rate-limit headers.
 */
export function refineDocument(doc: OpenApiDocument, routes: readonly RouteInfo[], prefix: string): void {
  const routeOf = new Map(routes.map((r) => [`${r.method.toLowerCase()} ${r.url.replace(/:(\w+)/g, '{$1}')}`, r]));
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(item)) {
      const route = routeOf.get(`${method} ${path}`);
      for (const p of op.parameters ?? []) {
        if (p.in !== 'path' && p.schema?.default !== undefined) delete p.required;
      }
      if (op.requestBody && admitsNull(op.requestBody.content?.['application/json']?.schema)) op.requestBody.required = false;
      op.tags = op.tags?.map((tag) => TAGS[tag]?.name ?? tag);
      const key = `${method.toUpperCase()} ${path.slice(prefix.length)}`;
      describeResponses(op, operationKind(op, method, path, route, prefix), ROUTE_CODES[key]);
      op.description = withTryItNotes(op.description, key);
      if (route && route.rateLimit !== 'none') addRateLimitHeaders(op);
    }
  }
  const used = new Set(Object.values(doc.paths ?? {}).flatMap((item) => Object.values(item).flatMap((op) => op.tags ?? [])));
  doc.tags = Object.values(TAGS).filter((t) => used.has(t.name));
  applyRuleBounds(doc);
}

function operationKind(op: OpenApiOperation, method: string, path: string, route: RouteInfo | undefined, prefix: string): OperationKind {
  const ids = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).filter((name) => name in PATH_RESOURCES);
  return {
    secured: (op.security?.length ?? 0) > 0,
    adminDetail: route?.auth === 'admin' ? (route.adminDetail ?? 'Administrator privileges required') : undefined,
    // a signature-verified route keeps its body as raw bytes: no JSON parser, no nesting guard
    readsJsonBody: BODY_METHODS.has(method) && route?.auth !== 'signature',
    rateLimited: route !== undefined && route.rateLimit !== 'none',
    resource: ids.length > 0 ? PATH_RESOURCES[ids[ids.length - 1]] : undefined,
    usesDatabase: path.startsWith(`${prefix}/`),
    writes: path.startsWith(`${prefix}/`) && BODY_METHODS.has(method),
  };
}

function describeResponses(op: OpenApiOperation, kind: OperationKind, routeCodes: Parameters<typeof errorCodesOf>[1]): void {
  const responses = (op.responses ??= {});
  const codes = errorCodesOf(kind, routeCodes);
  for (const status of errorStatusesOf(codes, kind)) responses[status] ??= {};
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

function addRateLimitHeaders(op: OpenApiOperation): void {
  for (const [status, response] of Object.entries(op.responses ?? {})) {
    response.headers = { ...response.headers, ...RATE_LIMIT_HEADERS, ...(status === '429' ? RETRY_AFTER : {}) };
  }
}

function admitsNull(schema: { anyOf?: { type?: unknown }[] } | undefined): boolean {
  return schema?.anyOf?.some((s) => s.type === 'null') ?? false;
}

/** Every schema object of the document (request bodies, parameters, components), rule bounds made minimum/maximum. */
function applyRuleBounds(node: unknown): void {
  if (Array.isArray(node)) {
    for (const child of node) applyRuleBounds(child);
    return;
  }
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
