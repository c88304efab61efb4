import crypto from 'node:crypto';
import { PrivatePostgres, PrivateRedis } from './infra.ts';
import { Inspector } from './invariants.ts';
import type { ServiceProcess} from './service.ts';
import { destroyAll, jwtPrivateKey, SHOPIFY_SECRET, startAll, type ServiceOptions } from './service.ts';
import { call, type Result } from './http.ts';

/** Generous limits: the load itself must not be rate limited (the limit check has its own processes). */
export const UNLIMITED = {
  RATE_LIMIT_AUTHENTICATED: '1000000',
  RATE_LIMIT_ANONYMOUS: '1000000',
  RATE_LIMIT_WEBHOOK: '1000000',
};

/**
 * One scenario's world: a private PostgreSQL (one database), optionally a private Redis, and the
 * service processes started on them. Everything is torn down by `destroy()`.
 */
export class Deployment {
  readonly pg: PrivatePostgres;
  readonly redis: PrivateRedis | undefined;
  readonly databaseUrl: string;
  readonly jwtKey = jwtPrivateKey();
  readonly inspector: Inspector;
  readonly processes = new Set<ServiceProcess>();

  private constructor(pgServer: PrivatePostgres, redis: PrivateRedis | undefined, databaseUrl: string) {
    this.pg = pgServer;
    this.redis = redis;
    this.databaseUrl = databaseUrl;
    this.inspector = new Inspector(databaseUrl);
  }

  static async create(opts: { redis: boolean }): Promise<Deployment> {
    const pgServer = await PrivatePostgres.start();
    let redis: PrivateRedis | undefined;
    try {
      redis = opts.redis ? await PrivateRedis.start() : undefined;
      const url = await pgServer.createDatabase('oas_reliability');
      return new Deployment(pgServer, redis, url);
    } catch (err) {
      await redis?.destroy();
      await pgServer.destroy();
      throw err;
    }
  }

  options(role: ServiceOptions['role'], env: Record<string, string> = {}, name?: string): ServiceOptions {
    return {
      role,
      databaseUrl: this.databaseUrl,
      ...(this.redis ? { redisUrl: this.redis.url } : {}),
      jwtKey: this.jwtKey,
      env: { ...UNLIMITED, ...env },
      ...(name ? { name } : {}),
    };
  }

  async start(...options: ServiceOptions[]): Promise<ServiceProcess[]> {
    const started = await startAll(options);
    for (const p of started) this.processes.add(p);
    return started;
  }

  /** The fleet shape of the soak and storm scenarios: two API and two worker processes; returns the API ones. */
  async startTwoApisTwoWorkers(): Promise<ServiceProcess[]> {
    const started = await this.start(
      this.options('api', {}, 'api-1'),
      this.options('api', {}, 'api-2'),
      this.options('worker', {}, 'worker-1'),
      this.options('worker', {}, 'worker-2'),
    );
    return started.filter((p) => p.role === 'api');
  }

  async destroy(): Promise<void> {
    await destroyAll(this.processes);
    await this.inspector.close().catch(() => {});
    await this.redis?.destroy();
    await this.pg.destroy();
  }
}

/** A platform orders/create payload for seeded products (SKUs `${tag}-${i}`). */
export function platformOrder(externalId: number, lines: { sku: string; quantity: number }[], email: string): string {
  return JSON.stringify({
    id: externalId,
    email,
    customer: { email, first_name: 'Storm', last_name: `Customer ${externalId}` },
    shipping_address: { first_name: 'Storm', last_name: 'Customer', address1: '1 Test Street', city: 'Testville', zip: '12345', country_code: 'US' },
    line_items: lines.map((l, i) => ({ sku: l.sku, title: `Line ${i + 1}`, quantity: l.quantity })),
  });
}

export function shopifyHmac(body: string, secret = SHOPIFY_SECRET): string {
  return crypto.createHmac('sha256', secret).update(body).digest('base64');
}

/** POSTs a signed (or deliberately badly signed) inbound webhook: an order's creation, or with `topic` its cancellation. */
export function sendInbound(
  base: string,
  body: string,
  webhookId: string,
  opts: { badSignature?: boolean; topic?: 'orders/create' | 'orders/cancelled' } = {},
): Promise<Result> {
  const hmac = opts.badSignature ? shopifyHmac(body, 'not-the-secret') : shopifyHmac(body);
  const topic = opts.topic ?? 'orders/create';
  return call(base, 'POST', `/api/v1/webhooks/${topic}`, {
    raw: body,
    headers: {
      'content-type': 'application/json',
      'x-shopify-hmac-sha256': hmac,
      'x-shopify-webhook-id': webhookId,
      'x-shopify-topic': topic,
      'x-shopify-shop-domain': 'reliability.myshopify.com',
      'x-shopify-triggered-at': new Date().toISOString(),
    },
  });
}

export function pick<T>(items: readonly T[]): T {
  return items[Math.floor(Math.random() * items.length)];
}

export function randInt(min: number, max: number): number {
  return min + Math.floor(Math.random() * (max - min + 1));
}
