/**
 * The logged-in users the load is sent as, and the request patterns built from them: each read
 * scenario's service route beside the baseline route with the same query, and the two writes.
 */
import crypto from 'node:crypto';
import type pg from 'pg';
import type { RunContext } from './context.ts';
import { PASSWORD, PRODUCTS, WEBHOOK_SECRET } from './options.ts';
import { emailOf, skuOf } from './seed.ts';
import type { Pattern } from './types.ts';

export interface Session {
  userId: number;
  email: string;
  token: string;
  orderIds: number[];
  orderCount: number;
  itemCount: number;
}

async function login(ctx: RunContext, email: string, password: string): Promise<string> {
  const res = await fetch(`${ctx.serviceUrl}/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: email, password }),
  });
  const body = (await res.json()) as { access_token?: string };
  if (res.status !== 200 || !body.access_token) throw new Error(`login ${email}: ${res.status} ${JSON.stringify(body)}`);
  return body.access_token;
}

/** Logs in `count` different users (spread over the customers) and collects ids each may read. */
export async function sessions(ctx: RunContext, client: pg.Client, count: number, customers: number): Promise<Session[]> {
  const step = Math.max(1, Math.floor(customers / count));
  const numbers = Array.from({ length: Math.min(count, customers) }, (_, i) => 1 + i * step);
  const out: Session[] = [];
  for (let i = 0; i < numbers.length; i += 4) {
    const tokens = await Promise.all(numbers.slice(i, i + 4).map((n) => login(ctx, emailOf(n), PASSWORD)));
    for (const [k, token] of tokens.entries()) {
      const email = emailOf(numbers[i + k]);
      const user = await client.query<{ id: number }>('SELECT id FROM users WHERE email = $1', [email]);
      const userId = Number(user.rows[0].id);
      out.push({ userId, email, token, orderIds: await orderIdsOf(client, userId), ...(await countsOf(client, userId)) });
    }
  }
  return out;
}

/** Up to 50 of the user's orders, at random. */
export async function orderIdsOf(client: pg.Client, userId: number): Promise<number[]> {
  const orders = await client.query<{ id: number }>('SELECT id FROM orders WHERE user_id = $1 ORDER BY random() LIMIT 50', [userId]);
  return orders.rows.map((r) => Number(r.id));
}

async function countsOf(client: pg.Client, userId: number): Promise<{ orderCount: number; itemCount: number }> {
  const counts = await client.query<{ o: number; i: number }>(
    `SELECT (SELECT count(*)::int FROM orders WHERE user_id = $1) AS o,
            (SELECT count(*)::int FROM items WHERE user_id = $1 AND deleted_at IS NULL) AS i`,
    [userId],
  );
  return { orderCount: Number(counts.rows[0].o), itemCount: Number(counts.rows[0].i) };
}

const pages = (count: number, size: number, max: number): number[] =>
  Array.from({ length: Math.max(1, Math.min(max, Math.ceil(count / size))) }, (_, i) => i + 1);

export type ReadPatterns = Record<string, { service: Pattern; baseline: Pattern }>;

export function readPatterns(s: Session[]): ReadPatterns {
  return {
    'GET /auth/me': {
      service: { kind: 'get', entries: s.map((x) => ({ token: x.token, paths: ['/api/v1/auth/me'] })) },
      baseline: { kind: 'get', entries: s.map((x) => ({ paths: [`/users/${x.userId}`] })) },
    },
    'GET /orders/{id}': {
      service: { kind: 'get', entries: s.map((x) => ({ token: x.token, paths: x.orderIds.map((id) => `/api/v1/orders/${id}`) })) },
      baseline: { kind: 'get', entries: s.map((x) => ({ paths: x.orderIds.map((id) => `/orders/${id}`) })) },
    },
    'GET /orders?page': {
      service: {
        kind: 'get',
        entries: s.map((x) => ({ token: x.token, paths: pages(x.orderCount, 20, 5).map((p) => `/api/v1/orders?page=${p}&page_size=20`) })),
      },
      baseline: { kind: 'get', entries: s.map((x) => ({ paths: pages(x.orderCount, 20, 5).map((p) => `/users/${x.userId}/orders?page=${p}`) })) },
    },
    'GET /items': {
      service: {
        kind: 'get',
        entries: s.map((x) => ({ token: x.token, paths: pages(x.itemCount, 20, 3).map((p) => `/api/v1/items?skip=${(p - 1) * 20}&limit=20`) })),
      },
      baseline: { kind: 'get', entries: s.map((x) => ({ paths: pages(x.itemCount, 20, 3).map((p) => `/users/${x.userId}/items?skip=${(p - 1) * 20}`) })) },
    },
  };
}

const WEBHOOK_TEMPLATE: Record<string, unknown> = {
  name: '#1042',
  currency: 'USD',
  financial_status: 'paid',
  created_at: '2026-11-20T14:03:11-05:00',
  shipping_address: {
    first_name: 'Jane',
    last_name: 'Doe',
    address1: '12 Harbour Street',
    city: 'Portland',
    province_code: 'ME',
    zip: '04101',
    country_code: 'US',
  },
};

export interface WritePatterns {
  order: Pattern;
  webhook: Pattern;
}

export function writePatterns(runId: string, s: Session[], customers: number): WritePatterns {
  return {
    order: {
      kind: 'post-order',
      path: '/api/v1/orders',
      tokens: s.map((x) => x.token),
      productIds: Array.from({ length: PRODUCTS }, (_, i) => i + 1),
    },
    webhook: {
      kind: 'webhook',
      path: '/api/v1/webhooks/orders/create',
      secret: WEBHOOK_SECRET,
      template: WEBHOOK_TEMPLATE,
      idPrefix: `${runId}-${crypto.randomBytes(2).toString('hex')}-`,
      emails: Array.from({ length: Math.min(customers, 200) }, (_, i) => emailOf(i + 1)),
      skus: Array.from({ length: PRODUCTS }, (_, i) => skuOf(i + 1)),
    },
  };
}
