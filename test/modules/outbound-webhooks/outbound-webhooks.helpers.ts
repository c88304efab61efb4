import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { api, type TestUser } from '../../helpers/app.ts';

export const BASE = '/api/v1/webhooks/subscriptions';

export interface Envelope {
  id: string;
  type: string;
  timestamp: string;
  data: { order_id: number; sequence: number; status: string };
}

export interface Hit {
  headers: http.IncomingHttpHeaders;
  body: string;
  /** the `webhook-id` header */
  id: string;
  /** when it arrived (ms since the receiver started), and when it was answered */
  at: number;
  answeredAt?: number;
}

export interface Answer {
  status: number;
  body?: string;
}

/**
 * A real HTTP server on 127.0.0.1 whose answers may take their time: `respond` may return a promise
 * (a request stays in flight until it settles). Counts requests in flight and their maximum.
 */
export interface SlowReceiver {
  url: string;
  hits: Hit[];
  inFlight: number;
  maxInFlight: number;
  respond: (hit: Hit, index: number) => Answer | Promise<Answer>;
  close(): Promise<void>;
}

/** On `port` when given (a receiver coming back where it was), else on a free one. */
export async function startSlowReceiver(path = '/hook', port = 0): Promise<SlowReceiver> {
  const started = Date.now();
  const receiver: SlowReceiver = {
    url: '',
    hits: [],
    inFlight: 0,
    maxInFlight: 0,
    respond: () => ({ status: 200, body: 'ok' }),
    close: async () => {},
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const hit: Hit = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), id: String(req.headers['webhook-id']), at: Date.now() - started };
      receiver.hits.push(hit);
      receiver.inFlight++;
      receiver.maxInFlight = Math.max(receiver.maxInFlight, receiver.inFlight);
      void Promise.resolve(receiver.respond(hit, receiver.hits.length - 1)).then((answer) => {
        receiver.inFlight--;
        hit.answeredAt = Date.now() - started;
        if (!res.destroyed) res.writeHead(answer.status).end(answer.body ?? '');
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}

/** A promise and the function that resolves it. */
export function gate(): { opened: Promise<void>; open: () => void } {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** The Standard Webhooks headers of a received request. */
export function signedHeaders(hit: { headers: http.IncomingHttpHeaders }): Record<string, string> {
  return {
    'webhook-id': String(hit.headers['webhook-id']),
    'webhook-timestamp': String(hit.headers['webhook-timestamp']),
    'webhook-signature': String(hit.headers['webhook-signature']),
  };
}

/** Verifies a delivery with the standardwebhooks package (a verifier this project did not write). */
export function verify(secret: string, hit: { headers: http.IncomingHttpHeaders; body: string }): Envelope {
  return new Webhook(secret).verify(hit.body, signedHeaders(hit)) as Envelope;
}

export function verifies(secret: string, hit: { headers: http.IncomingHttpHeaders; body: string }): boolean {
  try {
    verify(secret, hit);
    return true;
  } catch {
    return false;
  }
}

export async function subscribe(app: FastifyInstance, who: TestUser, url: string, events = ['order.created', 'order.status_changed']) {
  const res = await api(app, who, { method: 'POST', url: BASE, payload: { url, events } });
  assert.equal(res.statusCode, 201, res.body);
  return res.json<{ id: number; secret: string }>();
}

export async function placeOrder(app: FastifyInstance, who: TestUser, productId: number): Promise<number> {
  const res = await api(app, who, {
    method: 'POST',
    url: '/api/v1/orders',
    payload: { items: [{ product_id: productId, quantity: 1 }], shipping_address: '1 Hook Street' },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json<{ id: number }>().id;
}

export async function sendTestEvent(app: FastifyInstance, who: TestUser, subscriptionId: number): Promise<string> {
  const res = await api(app, who, { method: 'POST', url: `${BASE}/${subscriptionId}/test` });
  assert.equal(res.statusCode, 202, res.body);
  return res.json<{ message_id: string }>().message_id;
}

/** The state of a subscription's messages, from the database. */
export async function messageStates(app: FastifyInstance, subscriptionId: number): Promise<Map<string, string>> {
  const rows = await app.ctx.db.selectFrom('webhook_messages').select(['message_id', 'status']).where('subscription_id', '=', subscriptionId).execute();
  return new Map(rows.map((r) => [r.message_id, r.status]));
}
