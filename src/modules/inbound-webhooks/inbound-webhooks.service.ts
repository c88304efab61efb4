import { isUtf8 } from 'node:buffer';
import crypto from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { AppContext } from '../../app-context.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { InboundWebhookRow, InboundWebhookStatus } from './inbound-webhooks.tables.ts';
import { cappedPageOf, type CappedPageResult } from '../../http/common.schemas.ts';
import { AppError } from '../../http/errors.ts';
import { MAX_ID } from '../../http/path-ids.ts';
import { inboundJobSentSince } from '../../jobs/jobs.repository.ts';
import { givenUpJob } from '../../jobs/queue.ts';
import type { Job } from '../../jobs/registry.ts';
import type { OrdersService } from '../orders/orders.service.ts';
import { findProductsBySku } from '../products/products.repository.ts';
import type { UsersService } from '../users/users.service.ts';
import {
  findInboundWebhook,
  insertInboundWebhook,
  linkInboundWebhook,
  listInboundWebhooks,
  lockForPlatformOrder,
  recordPlatformCancellation,
  resetInboundWebhook,
  settleInboundWebhook,
  settleTakingWaitingCancellation,
  type InboundWebhookSummaryRow,
} from './inbound-webhooks.repository.ts';
import type { InboundListQuery } from './inbound-webhooks.schemas.ts';
import { InboundRejection, mapShopifyCancellation, mapShopifyOrder, SHOPIFY_SOURCE } from './shopify-order.ts';

export const ORDERS_CREATE_TOPIC = 'orders/create';
export const ORDERS_CANCELLED_TOPIC = 'orders/cancelled';

const notFound = () => new AppError('NOT_FOUND', 'Inbound webhook not found');

const REPROCESS_MESSAGES: Record<InboundWebhookStatus, string> = {
  processed: 'Webhook queued for processing again; the order it was linked to is linked again, never created twice',
  failed: 'Webhook queued for processing again',
  received: 'Webhook queued for processing (it had not been processed yet)',
};

/** Fault injection for tests (buildApp's `hooks.inboundProcessing`). */
export interface InboundProcessHooks {
  /** runs in every attempt before the stored payload is read; a throw is a transient failure */
  beforeProcess?: (inboundWebhookId: number, lastAttempt: boolean) => void | Promise<void>;
  /** runs when an attempt has ended, whatever its outcome (also one the queue gave up on while it ran) */
  afterProcess?: (inboundWebhookId: number) => void;
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return (Array.isArray(v) ? v[0] : v)?.trim() || undefined;
}

/** Shopify's inbound scheme: base64 HMAC-SHA256 of the raw body bytes, compared in constant time. */
function verifyShopifyHmac(secret: string, rawBody: Buffer, signature: string | undefined): boolean {
  if (!signature) return false;
  const expected = crypto.createHmac('sha256', secret).update(rawBody).digest();
  const given = Buffer.from(signature.trim(), 'base64');
  // timingSafeEqual throws on a length mismatch; the length of a MAC is no secret
  return given.length === expected.length && crypto.timingSafeEqual(given, expected);
}

/** A platform id header (webhook or event id), at most 255 characters; a longer one is 422. */
function platformId(headers: IncomingHttpHeaders, label: string): string | undefined {
  const name = label.toLowerCase();
  const value = header(headers, name);
  if (value !== undefined && value.length > 255) {
    throw new AppError('VALIDATION_ERROR', `${label} is too long`, {
      errors: [{ loc: ['header', name], msg: 'at most 255 characters', type: 'string_too_long' }],
    });
  }
  return value;
}

/** The platform headers kept with the payload (the HMAC too: the stored body can be re-verified). */
function platformHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of Object.keys(headers)) {
    if (name.startsWith('x-shopify-') || name === 'content-type' || name === 'user-agent') {
      const v = header(headers, name);
      if (v !== undefined) kept[name] = v.slice(0, 1000);
    }
  }
  return kept;
}

/** The stored payload as a JSON object; any other signed body fails here with the reason, never retried. */
function storedPayload(row: InboundWebhookRow): object {
  if (row.raw_body === null) throw new InboundRejection('payload was removed by the retention purge');
  if (row.raw_body_encoding !== 'utf8') throw new InboundRejection('payload is not UTF-8 text');
  let payload: unknown;
  try {
    payload = JSON.parse(row.raw_body);
  } catch {
    throw new InboundRejection('payload is not valid JSON');
  }
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) throw new InboundRejection('payload is not a JSON object');
  return payload;
}

export class InboundWebhookService {
  private readonly deps: Pick<AppContext, 'db' | 'queue' | 'config' | 'log'> & { orders: OrdersService; users: UsersService; hooks?: InboundProcessHooks };

  constructor(deps: InboundWebhookService['deps']) {
    this.deps = deps;
  }

  /**
   * Verifies the HMAC over the raw bytes, stores the body once per delivery and enqueues its processing, in one
   * transaction. The HMAC covers no id, so a delivery seen before (same webhook id, event id, or body within the
   * replay window) is acknowledged only; nor `X-Shopify-Topic`, so a header naming another topic is refused.
   */
  async receive(rawBody: Buffer, headers: IncomingHttpHeaders, topic: string): Promise<{ webhookId: string; duplicate: boolean }> {
    const secret = this.deps.config.shopifyWebhookSecret;
    if (!secret) throw new AppError('WEBHOOK_NOT_CONFIGURED', 'Inbound webhooks are not configured on this server');
    if (!verifyShopifyHmac(secret, rawBody, header(headers, 'x-shopify-hmac-sha256'))) {
      throw new AppError('INVALID_SIGNATURE', 'Invalid webhook signature');
    }
    const namedTopic = header(headers, 'x-shopify-topic');
    if (namedTopic !== undefined && namedTopic !== topic) {
      throw new AppError('INVALID_SIGNATURE', `X-Shopify-Topic ${JSON.stringify(namedTopic.slice(0, 64))} does not match this route (${topic})`);
    }
    // byte for byte: as text when PostgreSQL can hold it as text, else in base64
    const asText = isUtf8(rawBody) && !rawBody.includes(0);
    // without the platform's id, the body's digest identifies the delivery
    const givenId = platformId(headers, 'X-Shopify-Webhook-Id');
    const eventId = platformId(headers, 'X-Shopify-Event-Id') ?? null;
    const bodySha256 = crypto.createHash('sha256').update(rawBody).digest('hex');
    const webhookId = givenId ?? `sha256:${bodySha256}`;
    const stored = await this.deps.db.transaction().execute(async (trx) => {
      const id = await insertInboundWebhook(
        trx,
        {
          webhook_id: webhookId,
          event_id: eventId,
          body_sha256: bodySha256,
          topic,
          shop_domain: header(headers, 'x-shopify-shop-domain') ?? null,
          headers: platformHeaders(headers),
          raw_body: asText ? rawBody.toString('utf8') : rawBody.toString('base64'),
          raw_body_encoding: asText ? 'utf8' : 'base64',
        },
        this.deps.config.inboundReplayWindowSeconds > 0,
      );
      if (id === undefined) return false;
      await this.deps.queue.send(trx, 'webhook-inbound-process', { inboundWebhookId: id });
      return true;
    });
    return { webhookId, duplicate: !stored };
  }

  /** Creates or links the order; a payload that cannot become one fails at once, other errors on the last attempt. */
  async process(inboundWebhookId: number, lastAttempt: boolean): Promise<void> {
    const row = await findInboundWebhook(this.deps.db, inboundWebhookId);
    if (!row || row.status !== 'received') return;
    try {
      await this.deps.hooks?.beforeProcess?.(inboundWebhookId, lastAttempt);
      if (row.topic === ORDERS_CANCELLED_TOPIC) {
        await this.applyCancellation(row.id, await mapShopifyCancellation(storedPayload(row)));
        return;
      }
      if (row.topic !== null && row.topic !== ORDERS_CREATE_TOPIC) throw new InboundRejection(`unsupported topic: ${row.topic}`);
      const mapped = await mapShopifyOrder(storedPayload(row));
      try {
        await this.createOrLinkOrder(row.id, mapped);
      } catch (err) {
        // a concurrent delivery created the same order or customer first: the second pass links it
        if (!isUniqueViolation(err)) throw err;
        await this.createOrLinkOrder(row.id, mapped);
      }
    } catch (err) {
      if (err instanceof InboundRejection) {
        await settleInboundWebhook(this.deps.db, row.id, { status: 'failed', orderId: null, error: err.message });
        this.deps.log.warn({ inboundWebhookId, webhookId: row.webhook_id, reason: err.message }, 'inbound webhook rejected');
        return;
      }
      if (lastAttempt) {
        const message = err instanceof Error ? err.message : String(err);
        await settleInboundWebhook(this.deps.db, row.id, { status: 'failed', orderId: null, error: `processing error: ${message}`.slice(0, 1000) });
      }
      throw err;
    } finally {
      this.deps.hooks?.afterProcess?.(inboundWebhookId);
    }
  }

  /** The dead-letter handler: an event still `received` whose job pg-boss gave up on fails with the job's last error. */
  async abandon(job: Job<'webhook-inbound-process-dead-letter'>): Promise<void> {
    const given = givenUpJob(job);
    const cause = given.cause ?? 'the job queue gave up on it';
    const id = job.data.inboundWebhookId;
    // reprocessed since: the newer job owns the outcome (+1 ms: the job's time is cut to milliseconds)
    if (job.sourceCreatedOn !== null) {
      const after = new Date(new Date(job.sourceCreatedOn).getTime() + 1);
      if (await inboundJobSentSince(this.deps.db, 'webhook-inbound-process', id, after)) return;
    }
    const settled = await settleInboundWebhook(this.deps.db, id, { status: 'failed', orderId: null, error: `processing error: ${cause}`.slice(0, 1000) });
    if (settled) this.deps.log.error({ inboundWebhookId: id, ...given, cause }, 'inbound webhook processing given up by the queue');
  }

  /** The administrators' list of the stored webhooks. */
  async list(q: InboundListQuery): Promise<CappedPageResult<InboundWebhookSummaryRow>> {
    const { rows, count } = await listInboundWebhooks(this.deps.db, { status: q.status, topic: q.topic }, { limit: q.page_size, offset: (q.page - 1) * q.page_size });
    return cappedPageOf(rows, count, q.page, q.page_size);
  }

  async get(id: number): Promise<InboundWebhookRow> {
    // an id no row can have is the same 404 as a missing row, and never reaches the database
    const row = id >= 1 && id <= MAX_ID ? await findInboundWebhook(this.deps.db, id) : undefined;
    if (!row) throw notFound();
    return row;
  }

  /**
   * Queues the stored webhook for processing again (back to `received`, keeping its order link). Processing locks
   * the row and finds the order a platform id already has: however often this runs, one order, its stock reserved once.
   */
  async reprocess(id: number): Promise<{ message: string; orderId: number | null }> {
    if (!(id >= 1 && id <= MAX_ID)) throw notFound();
    return this.deps.db.transaction().execute(async (trx) => {
      const row = await findInboundWebhook(trx, id, true);
      if (!row) throw notFound();
      if (row.raw_body === null) {
        throw new AppError('INVALID_STATE', 'The payload of this webhook was removed by the retention purge; it cannot be processed again');
      }
      if (row.status !== 'received') await resetInboundWebhook(trx, id);
      await this.deps.queue.send(trx, 'webhook-inbound-process', { inboundWebhookId: id });
      return { message: REPROCESS_MESSAGES[row.status], orderId: row.order_id };
    });
  }

  private async createOrLinkOrder(inboundId: number, mapped: Awaited<ReturnType<typeof mapShopifyOrder>>): Promise<void> {
    await this.deps.orders.inTransaction(async (trx) => {
      // one processor per stored event at a time; a repeated job finds it settled
      const status = await lockForPlatformOrder(trx, inboundId, SHOPIFY_SOURCE, mapped.externalId);
      if (status !== 'received') return;
      const existing = await this.deps.orders.findIdByExternalId(trx, SHOPIFY_SOURCE, mapped.externalId);
      if (existing !== undefined) {
        await settleInboundWebhook(trx, inboundId, { status: 'processed', orderId: existing, error: null });
        return;
      }
      const products = await findProductsBySku(trx, mapped.lines.map((l) => l.sku));
      const bySku = new Map(products.map((p) => [p.sku, p]));
      const unknown = mapped.lines.filter((l) => !bySku.has(l.sku)).map((l) => l.sku);
      if (unknown.length > 0) throw new InboundRejection(`unknown SKU: ${unknown.join(', ')}`);
      const inactive = products.filter((p) => !p.is_active).map((p) => p.sku);
      if (inactive.length > 0) throw new InboundRejection(`product not available for SKU: ${inactive.join(', ')}`);

      const customer = await this.deps.users.findOrCreateCustomer(trx, { email: mapped.email, fullName: mapped.customerName });
      const order = await this.deps.orders.place(trx, {
        userId: customer.id,
        shippingAddress: mapped.shippingAddress,
        lines: mapped.lines.map((l) => ({ productId: bySku.get(l.sku)!.id, quantity: l.quantity })),
        source: SHOPIFY_SOURCE,
        externalId: mapped.externalId,
      });
      // a product deactivated since it was read above: the next attempt says which
      if (!order) throw new Error('a product of the order was deactivated while it was being placed');
      // a cancellation that arrived before the creation cancels the order now
      const waiting = await settleTakingWaitingCancellation(trx, inboundId, order.id, SHOPIFY_SOURCE, mapped.externalId);
      if (waiting) {
        await this.deps.orders.cancelByExternalId(trx, SHOPIFY_SOURCE, mapped.externalId, waiting.reason);
        await linkInboundWebhook(trx, waiting.inbound_webhook_id, order.id);
      }
    });
  }

  /** A platform cancellation: cancels the linked order as the API does, or records it for the creation to apply. */
  private async applyCancellation(inboundId: number, mapped: Awaited<ReturnType<typeof mapShopifyCancellation>>): Promise<void> {
    await this.deps.orders.inTransaction(async (trx) => {
      const status = await lockForPlatformOrder(trx, inboundId, SHOPIFY_SOURCE, mapped.externalId);
      if (status !== 'received') return;
      const result = await this.deps.orders.cancelByExternalId(trx, SHOPIFY_SOURCE, mapped.externalId, mapped.reason);
      if (result === undefined) {
        await recordPlatformCancellation(trx, { source: SHOPIFY_SOURCE, external_id: mapped.externalId, inbound_webhook_id: inboundId, reason: mapped.reason });
      } else if (!result.cancelled) {
        this.deps.log.info({ inboundWebhookId: inboundId, orderId: result.orderId }, 'platform cancellation of an order that is failed or cancelled already');
      }
      await settleInboundWebhook(trx, inboundId, { status: 'processed', orderId: result?.orderId ?? null, error: null });
    });
  }
}
