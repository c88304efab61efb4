import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/database.ts';
import type { OrderStatus } from '../../db/schema.ts';
import { isLastAttempt, type JobWithMetadata } from '../../jobs/queue.ts';
import { exactTotal, MAX_MONEY } from '../products/money.ts';
import type { OrderProcessJob } from './order-create.ts';
import type { OrderEventBus } from './order-events.ts';
import { changeOrderStatus } from './order-status.ts';
import { lockOrder, lockOrderProducts, priceLinesAndReserveStock } from './orders.repository.ts';

export type FailureReason = 'INSUFFICIENT_STOCK' | 'PRODUCT_UNAVAILABLE' | 'TOTAL_TOO_LARGE' | 'PROCESSING_ERROR';

/** Seams for tests: fault injection without touching the database. */
export interface OrderProcessorHooks {
  /** runs in every attempt between "processing" and the reservation; a throw is a transient failure */
  beforeReserve?: (orderId: number, attempt: number) => void | Promise<void>;
}

/**
 * The background job of an order: pending → processing (committed, with its event), then in one
 * transaction the lines are priced, the total computed and stock reserved for all lines — or the
 * order fails. Safe to run any number of times: the order row's lock and status decide whether
 * there is anything left to do, so stock is never reserved twice.
 */
export class OrderProcessor {
  hooks: OrderProcessorHooks = {};
  private readonly db: Db;
  private readonly orderEvents: OrderEventBus;
  private readonly log: FastifyBaseLogger;

  constructor(deps: { db: Db; orderEvents: OrderEventBus; log: FastifyBaseLogger }) {
    this.db = deps.db;
    this.orderEvents = deps.orderEvents;
    this.log = deps.log;
  }

  /** pg-boss handler: a throw is retried with backoff; on the last attempt the order fails instead. */
  async handle(job: JobWithMetadata<OrderProcessJob>): Promise<void> {
    const { orderId } = job.data;
    try {
      await this.process(orderId, job.retryCount + 1);
    } catch (err) {
      if (!isLastAttempt(job)) {
        this.log.warn({ err, orderId, attempt: job.retryCount + 1 }, 'order processing failed; will retry');
        throw err;
      }
      this.log.error({ err, orderId, attempt: job.retryCount + 1 }, 'order processing failed for good');
      await this.fail(orderId, 'PROCESSING_ERROR');
    }
  }

  /** Runs the processing of one order; returns its status afterwards (undefined: no such order). */
  async process(orderId: number, attempt = 1): Promise<OrderStatus | undefined> {
    const started = await this.db.transaction().execute(async (trx) => {
      const order = await lockOrder(trx, orderId);
      if (!order) return undefined;
      if (order.status === 'pending') return (await changeOrderStatus(trx, this.orderEvents, order, 'processing')).status;
      return order.status;
    });
    // completed or failed already (a duplicate job): nothing to do
    if (started !== 'processing') return started;

    await this.hooks.beforeReserve?.(orderId, attempt);

    return this.db.transaction().execute(async (trx) => {
      const order = await lockOrder(trx, orderId);
      if (!order || order.status !== 'processing') return order?.status;
      const products = await lockOrderProducts(trx, orderId);
      let failure: FailureReason | undefined;
      for (const p of products) {
        if (!p.is_active) {
          failure = 'PRODUCT_UNAVAILABLE';
          break;
        }
        if (p.stock < p.quantity) failure ??= 'INSUFFICIENT_STOCK';
      }
      if (failure === undefined) {
        // the products are locked: these are the prices the lines get
        const total = exactTotal(products);
        if (Number(total) > MAX_MONEY) failure = 'TOTAL_TOO_LARGE';
        else {
          await priceLinesAndReserveStock(trx, orderId);
          return (await changeOrderStatus(trx, this.orderEvents, order, 'completed', { totalAmount: total, failureReason: null })).status;
        }
      }
      return (await changeOrderStatus(trx, this.orderEvents, order, 'failed', { failureReason: failure })).status;
    });
  }

  /** Marks a not-yet-final order failed (the last attempt gave up). */
  async fail(orderId: number, reason: FailureReason): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const order = await lockOrder(trx, orderId);
      if (!order || order.status === 'completed' || order.status === 'failed') return;
      await changeOrderStatus(trx, this.orderEvents, order, 'failed', { failureReason: reason });
    });
  }
}
