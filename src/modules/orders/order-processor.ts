import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/database.ts';
import type { OrderStatus } from '../../db/schema.ts';
import { givenUpJob, isLastAttempt, type JobQueue } from '../../jobs/queue.ts';
import type { Job } from '../../jobs/registry.ts';
import { exactTotal, MAX_MONEY } from '../products/money.ts';
import { changeStock, type LockedProduct } from '../products/products.repository.ts';
import { changeOrder, changeOrders, inOrderTransaction } from './order-lifecycle.ts';
import { lockOrder, lockOrders, lockOrdersWithProducts, requeuedSince, type ProductDemand, type StatusChange } from './orders.changes.repository.ts';
import { findOrderWithLines } from './orders.reads.repository.ts';
import type { FailureDetails } from './orders.schemas.ts';

/** Seams for tests (buildApp's `hooks.orderProcessing`): fault injection without touching the database. */
export interface OrderProcessorHooks {
  /** runs in every attempt between "processing" and the reservation; a throw is a transient failure */
  beforeReserve?: (orderId: number, attempt: number) => void | Promise<void>;
  /** runs when the job's last attempt records the failure; a throw is a failure the handler cannot record */
  beforeFail?: (orderId: number) => void | Promise<void>;
  /** runs when an attempt's processing has ended, whatever its outcome (also one the queue gave up on while it ran) */
  afterProcess?: (orderIds: readonly number[]) => void;
}

/** A retry's `pending` event must follow a given-up job's creation by this: the job's time is cut to milliseconds, the event's is not. */
const REQUEUE_MARGIN_MS = 1;

/** A processing order's move: completed at its total, or failed PRODUCT_UNAVAILABLE, INSUFFICIENT_STOCK (with the short lines) or TOTAL_TOO_LARGE. */
function decide(id: number, demand: readonly ProductDemand[], products: ReadonlyMap<number, LockedProduct>, stock: ReadonlyMap<number, number>): StatusChange {
  let failure: 'INSUFFICIENT_STOCK' | 'PRODUCT_UNAVAILABLE' | 'TOTAL_TOO_LARGE' | undefined;
  const short: FailureDetails['lines'] = [];
  for (const d of demand) {
    const p = products.get(d.productId);
    if (!p?.is_active) {
      failure = 'PRODUCT_UNAVAILABLE';
      break;
    }
    if (stock.get(p.id)! < d.quantity) {
      failure ??= 'INSUFFICIENT_STOCK';
      short.push({ product_id: d.productId, requested: d.quantity, available: stock.get(p.id)! });
    }
  }
  if (failure === undefined) {
    const total = exactTotal(demand.map((d) => ({ price: products.get(d.productId)!.price, quantity: d.quantity })));
    if (Number(total) <= MAX_MONEY) return { id, from: 'processing', to: 'completed', total, failureReason: null };
    failure = 'TOTAL_TOO_LARGE';
  }
  const details = failure === 'INSUFFICIENT_STOCK' ? { lines: short } : undefined;
  return { id, from: 'processing', to: 'failed', failureReason: failure, reason: failure, details };
}

/** Processing of orders, one or a batch alike, safe to rerun: the order row's lock and status decide what is left, so stock is never reserved twice or for a cancelled order. */
export class OrderProcessor {
  private readonly deps: { db: Db; queue: JobQueue; log: FastifyBaseLogger; hooks?: OrderProcessorHooks };

  constructor(deps: OrderProcessor['deps']) {
    this.deps = deps;
  }

  /** pg-boss handler of one job: a throw is retried with backoff; on the last attempt the order fails instead. */
  async handle(job: Job<'order-process'>): Promise<void> {
    const { orderId } = job.data;
    const attempt = job.retryCount + 1;
    try {
      await this.processOrders([{ orderId, attempt }]);
    } catch (err) {
      if (!isLastAttempt(job)) {
        this.deps.log.warn({ err, orderId, attempt }, 'order processing failed; will retry');
        throw err;
      }
      this.deps.log.error({ err, orderId, attempt }, 'order processing failed for good');
      await this.deps.hooks?.beforeFail?.(orderId);
      await this.failUnlessFinal(orderId);
    }
  }

  /** The jobs of a fetched batch, processed together (a throw: the queue runs each through `handle`). */
  async handleBatch(jobs: readonly Job<'order-process'>[]): Promise<void> {
    await this.processOrders(jobs.map((job) => ({ orderId: job.data.orderId, attempt: job.retryCount + 1 })));
  }

  /** Processes one order; returns its status afterwards (undefined: no such order). */
  async process(orderId: number): Promise<OrderStatus | undefined> {
    await this.processOrders([{ orderId, attempt: 1 }]);
    return (await findOrderWithLines(this.deps.db, orderId))?.order.status;
  }

  /** pending → processing, then each order completed from stock or failed, in two transactions. */
  private async processOrders(items: readonly { orderId: number; attempt: number }[]): Promise<void> {
    const ids = [...new Set(items.map((i) => i.orderId))].sort((a, b) => a - b);
    try {
      // two or more orders locked in id order first; one processing already (an earlier attempt moved it) stays as it is
      await inOrderTransaction(this.deps.db, this.deps.queue, async (trx) => {
        if (ids.length > 1) await lockOrders(trx, ids);
        await changeOrders(trx, ids.map((id) => ({ id, from: 'pending', to: 'processing' })));
      });
      for (const item of items) await this.deps.hooks?.beforeReserve?.(item.orderId, item.attempt);
      await inOrderTransaction(this.deps.db, this.deps.queue, async (trx) => {
        const locked = await lockOrdersWithProducts(trx, ids, 'processing');
        const products = new Map(locked.products.map((p) => [p.id, p]));
        // what each product has left for the next order, once the orders before it took their units
        const left = new Map(locked.products.map((p) => [p.id, p.stock]));
        const changes: StatusChange[] = [];
        for (const order of locked.orders) {
          // completed, failed or cancelled already (a duplicate job, or cancelled while queued)
          if (order.status !== 'processing') continue;
          const change = decide(order.id, order.demand, products, left);
          if (change.to === 'completed') for (const d of order.demand) left.set(d.productId, left.get(d.productId)! - d.quantity);
          changes.push(change);
        }
        const stock = [...left].map(([productId, units]) => ({ productId, delta: units - products.get(productId)!.stock }));
        await changeStock(trx, stock.filter((c) => c.delta !== 0));
        await changeOrders(trx, changes, locked.products);
      });
    } finally {
      this.deps.hooks?.afterProcess?.(ids);
    }
  }

  /** The dead-letter handler (pg-boss gave up without `handle` recording it): fails the order like a last attempt; returns whether it did. */
  async abandon(job: Job<'order-process-dead-letter'>): Promise<boolean> {
    const { orderId } = job.data;
    const requeuedAfter = job.sourceCreatedOn === null ? undefined : new Date(new Date(job.sourceCreatedOn).getTime() + REQUEUE_MARGIN_MS);
    const failed = await this.failUnlessFinal(orderId, requeuedAfter);
    if (failed) this.deps.log.error({ orderId, ...givenUpJob(job) }, 'order processing given up by the queue; order failed');
    return failed;
  }

  /** Fails the order unless final or retried after `requeuedAfter` (a newer job owns it); a pending one passes through processing for subscribers. */
  private async failUnlessFinal(orderId: number, requeuedAfter?: Date): Promise<boolean> {
    return inOrderTransaction(this.deps.db, this.deps.queue, async (trx) => {
      const order = await lockOrder(trx, orderId);
      if (!order || (order.status !== 'pending' && order.status !== 'processing')) return false;
      if (requeuedAfter && (await requeuedSince(trx, orderId, requeuedAfter))) return false;
      if (order.status === 'pending') await changeOrder(trx, { id: orderId, from: 'pending', to: 'processing' });
      await changeOrder(trx, { id: orderId, from: 'processing', to: 'failed', failureReason: 'PROCESSING_ERROR', reason: 'PROCESSING_ERROR' });
      return true;
    });
  }
}
