import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';

export const SHOPIFY_SECRET = 'test-shopify-webhook-secret';
export const FIXTURE_PATH = new URL('../modules/inbound-webhooks/fixtures/shopify-orders-create.json', import.meta.url);

export function fixturePayload(): Record<string, unknown> {
  return JSON.parse(fs.readFileSync(FIXTURE_PATH, 'utf8')) as Record<string, unknown>;
}

export function shopifyHmac(body: string | Buffer, secret = SHOPIFY_SECRET): string {
  return crypto.createHmac('sha256', secret).update(body).digest('base64');
}

let counter = 0;

/** POSTs a body to an inbound route (orders/create unless `url` says otherwise), signed unless told otherwise. */
export function sendInbound(
  app: FastifyInstance,
  body: string | Buffer,
  opts: { webhookId?: string | null; hmac?: string | null; secret?: string; topic?: string; url?: string; eventId?: string } = {},
): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-shopify-topic': opts.topic ?? 'orders/create',
    'x-shopify-shop-domain': 'test-shop.myshopify.com',
    'x-shopify-triggered-at': new Date().toISOString(),
    'x-shopify-api-version': '2025-10',
  };
  const hmac = opts.hmac === undefined ? shopifyHmac(body, opts.secret) : opts.hmac;
  if (hmac !== null) headers['x-shopify-hmac-sha256'] = hmac;
  const webhookId = opts.webhookId === undefined ? `wh-${process.pid}-${++counter}-${crypto.randomBytes(4).toString('hex')}` : opts.webhookId;
  if (webhookId !== null) headers['x-shopify-webhook-id'] = webhookId;
  if (opts.eventId !== undefined) headers['x-shopify-event-id'] = opts.eventId;
  return app.inject({ method: 'POST', url: opts.url ?? '/api/v1/webhooks/orders/create', headers, payload: body }) as Promise<LightMyRequestResponse>;
}

export async function seedProduct(app: FastifyInstance, sku: string, opts: { price?: string; stock?: number; active?: boolean } = {}) {
  return app.ctx.db
    .insertInto('products')
    .values({ sku, name: `Product ${sku}`, price: opts.price ?? '10.00', stock: opts.stock ?? 100, is_active: opts.active ?? true })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface Receiver {
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** decides the answer of each request (default 200) */
  respond: (req: ReceivedRequest, index: number) => { status: number; headers?: Record<string, string>; body?: string };
  close(): Promise<void>;
}

/** A real HTTP server on 127.0.0.1 that records every request it gets. */
export async function startReceiver(path = '/hook'): Promise<Receiver> {
  const receiver: Receiver = {
    url: '',
    port: 0,
    requests: [],
    respond: () => ({ status: 200, body: 'ok' }),
    close: async () => {},
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const entry: ReceivedRequest = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      receiver.requests.push(entry);
      const answer = receiver.respond(entry, receiver.requests.length - 1);
      res.writeHead(answer.status, answer.headers ?? {});
      res.end(answer.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  receiver.port = port;
  receiver.url = `http://127.0.0.1:${port}${path}`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}
