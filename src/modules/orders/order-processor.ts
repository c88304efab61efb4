import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/database.ts';
import type { OrderStatus } from '../../db/schema.ts';
import type { OrderEventBus } from '../../events/order-events.ts';
import { givenUpJob, isLastAttempt } from '../../jobs/queue.ts';
import type { Job } from '../../jobs/registry.ts';
import { exactTotal, MAX_MONEY } from '../products/money.ts';
import { lockProductsQuery, stockChangePart, type LockedProduct } from '../products/products.repository.ts';
import { changeOrderStatus, changeOrderStatusLast, startProcessing, startProcessingQuietly, type FailureDetails, type StatusFields } from './order-lifecycle.ts';
import {
  finishOrdersQuietly,
  findOrderStatus,
  lockOrder,
  lockOrdersWithProducts,
  lockOrderWithProducts,
  moveToProcessingQuietly,
  requeuedSince,
  type OrderOutcome,
  type ProductDemand,
} from './orders.repository.ts';

export type FailureReason = 'INSUFFICIENT_STOCK' | 'PRODUCT_UNAVAILABLE' | 'TOTAL_TOO_LARGE' | 'PROCESSING_ERROR';

/** Seams for tests (buildApp's `hooks.orderProcessing`): fault injection without touching the database. */
export interface OrderProcessorHooks {
  /** runs in every attempt between "processing" and the reservation; a throw is a transient failure */
  beforeReserve?: (orderId: number, attempt: number) => void | Promise<void>;
  /** runs when the job's last attempt records the failure; a throw is a failure the handler cannot record */
  beforeFail?: (orderId: number) => void | Promise<void>;
}

/**
 * How far a retry's `pending` event must follow the creation of a given-up job to count as a new
 * round of processing. The job sent with the order (or with its retry) has the same timestamp as
 * that `pending` event (same transaction), but it reaches JavaScript cut to milliseconds while the
 * database keeps microseconds: one millisecond keeps that event from looking newer than its job. A
 * retry comes far later: the order must have been processed and failed first.
 */
const REQUEUE_MARGIN_MS = 1;

/** What the processing of one order decides: completed at its total, or failed, with why. */
type Decision = { status: 'completed'; total: string } | { status: 'failed'; reason: FailureReason; details: FailureDetails | undefined };

/**
 * Prices an order's demand with its locked products, or fails it: an inactive (or missing) product
 * fails it PRODUCT_UNAVAILABLE, a line wanting more than `available` of its product
 * INSUFFICIENT_STOCK (with every short line), a total above the largest amount TOTAL_TOO_LARGE.
 */
function decide(demand: readonly ProductDemand[], products: ReadonlyMap<number, LockedProduct>, available: (product: LockedProduct) => number): Decision {
  let failure: FailureReason | undefined;
  const short: FailureDetails['lines'] = [];
  for (const d of demand) {
    const p = products.get(d.productId);
    if (!p?.is_active) {
      failure = 'PRODUCT_UNAVAILABLE';
      break;
    }
    if (available(p) < d.quantity) {
      failure ??= 'INSUFFICIENT_STOCK';
      short.push({ product_id: d.productId, requested: d.quantity, available: available(p) });
    }
  }
  if (failure === undefined) {
    // the products are locked: these are the prices the lines get
    const total = exactTotal(demand.map((d) => ({ price: products.get(d.productId)!.price, quantity: d.quantity })));
    if (Number(total) <= MAX_MONEY) return { status: 'completed', total };
    failure = 'TOTAL_TOO_LARGE';
  }
  return { status: 'failed', reason: failure, details: failure === 'INSUFFICIENT_STOCK' ? { lines: short } : undefined };
}

/** The statuses a batch of orders moves through; it is processed together only when no listener acts on any of them. */
const BATCH_STATUSES = ['processing', 'completed', 'failed'] as const;

/**
 * The background job of an order: pending → processing (committed, with its event: alone when no
 * event listener acts on it, else in a transaction with what they write), then in one
 * transaction the lines are priced, the total computed and stock reserved for all lines — or the
 * order fails. Safe to run any number of times: the order row's lock and status decide whether
 * there is anything left to do, so stock is never reserved twice, nor for an order cancelled
 * meanwhile (a cancellation takes the same lock and the reservation re-reads the status under it).
 */
export class OrderProcessor {
  private readonly hooks: OrderProcessorHooks;
  private readonly db: Db;
  private readonly orderEvents: OrderEventBus;
  private readonly log: FastifyBaseLogger;

  constructor(deps: { db: Db; orderEvents: OrderEventBus; log: FastifyBaseLogger; hooks?: OrderProcessorHooks }) {
    this.db = deps.db;
    this.orderEvents = deps.orderEvents;
    this.log = deps.log;
    this.hooks = deps.hooks ?? {};
  }

  /** pg-boss handler: a throw is retried with backoff; on the last attempt the order fails instead. */
  async handle(job: Job<'order-process'>): Promise<void> {
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
    const quietly = await startProcessingQuietly(this.db, this.orderEvents, orderId);
    const started =
      // no listener acts on the move: it commits alone
      quietly?.status ??
      (await this.db.transaction().execute(
        // not pending: processing already (an earlier attempt's move committed), or nothing left to do
        async (trx) => (await startProcessing(trx, this.orderEvents, orderId))?.status ?? (await findOrderStatus(trx, orderId)),
      ));
    // completed, failed or cancelled already (a duplicate job, or cancelled while queued): nothing to do
    if (started !== 'processing') return started;

    await this.hooks.beforeReserve?.(orderId, attempt);

    // a move no listener acted on makes it likely that none acts on the outcome either: then the
    // outcome's statement carries the transaction's COMMIT (and starts over when one does after all)
    const outcome = await this.reserve(orderId, quietly !== undefined);
    return outcome === 'again' ? this.reserve(orderId, false) : outcome;
  }

  /**
   * The processing of a batch of order jobs together, in three round trips whatever their number,
   * where each order on its own takes three: the move of every pending order to `processing`, one
   * statement that commits alone; then one transaction that locks the orders and their products,
   * and one statement that writes every outcome, its events, the lines' prices and the stock, with
   * the COMMIT. The orders are decided in id order, each against the stock the ones before it left.
   * Only for what no event listener acts on: an order moves only when none acts on its move, and the
   * outcomes are written only when none acts on any of them (else nothing is, and each order goes on
   * alone). Returns the ids of the jobs whose orders it took to the end; the caller runs every other
   * job of the batch through `handle`, which finds each order where this left it (pending, or
   * processing after a move). A throw leaves the same: what committed is a move at most.
   *
   * Fault hooks (tests) and a batch of fewer than two orders go the way of one order.
   */
  async processMany(jobs: readonly Job<'order-process'>[]): Promise<Set<string>> {
    const done = new Set<string>();
    if (this.hooks.beforeReserve !== undefined || this.hooks.beforeFail !== undefined) return done;
    if (!BATCH_STATUSES.every((status) => this.orderEvents.tellsQuiet({ type: 'order.status_changed', status }))) return done;
    const jobOf = new Map<number, string>();
    for (const job of jobs) if (!jobOf.has(job.data.orderId)) jobOf.set(job.data.orderId, job.id);
    if (jobOf.size < 2) return done;
    const moved = await moveToProcessingQuietly(this.db, this.orderEvents, [...jobOf.keys()], new Date());
    if (moved.length === 0 || !(await this.reserveMany(moved))) return done;
    for (const id of moved) done.add(jobOf.get(id)!);
    return done;
  }

  /**
   * `reserve` for several orders in one transaction (see `processMany`): false when a listener acts
   * on an outcome after all, and nothing was written. An order no longer `processing` under its lock
   * (cancelled meanwhile) is left as it is.
   */
  private async reserveMany(ids: readonly number[]): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const locked = await lockOrdersWithProducts(trx, ids, 'processing', lockProductsQuery);
      const products = new Map(locked.products.map((p) => [p.id, p]));
      // what each product has left for the next order, once the orders before it took their units
      const left = new Map(locked.products.map((p) => [p.id, p.stock]));
      const taken = new Map<number, number>();
      const outcomes: OrderOutcome[] = [];
      for (const order of locked.orders) {
        if (order.status !== 'processing') continue;
        const decision = decide(order.demand, products, (p) => left.get(p.id)!);
        if (decision.status === 'failed') {
          const details = decision.details === undefined ? null : JSON.stringify(decision.details);
          outcomes.push({ id: order.id, status: 'failed', total: null, reason: decision.reason, details });
          continue;
        }
        for (const d of order.demand) {
          left.set(d.productId, left.get(d.productId)! - d.quantity);
          taken.set(d.productId, (taken.get(d.productId) ?? 0) + d.quantity);
        }
        outcomes.push({ id: order.id, status: 'completed', total: decision.total, reason: null, details: null });
      }
      if (outcomes.length === 0) return true;
      const stock = stockChangePart([...taken].map(([productId, quantity]) => ({ productId, delta: -quantity })));
      return finishOrdersQuietly(trx, this.orderEvents, outcomes, [...products.values()], stock, new Date());
    });
  }

  /**
   * In one transaction: the order's lines are priced, the total computed and stock reserved for all
   * lines, or the order fails. With `commitWithOutcome`, the outcome is written by the transaction's
   * last statement, with its COMMIT (`changeOrderStatusLast`); `'again'` when a listener acts on it
   * after all, and nothing was written.
   */
  private async reserve(orderId: number, commitWithOutcome: false): Promise<OrderStatus | undefined>;
  private async reserve(orderId: number, commitWithOutcome: boolean): Promise<OrderStatus | undefined | 'again'>;
  private async reserve(orderId: number, commitWithOutcome: boolean): Promise<OrderStatus | undefined | 'again'> {
    return this.db.transaction().execute(async (trx) => {
      // the products are locked with the order, and their units taken by the next statement (the
      // completion), never by the same one: see stockChangePart
      const locked = await lockOrderWithProducts(trx, orderId, 'processing', lockProductsQuery);
      if (!locked || locked.order.status !== 'processing') return locked?.order.status;
      const { order, demand } = locked;
      const products = new Map(locked.products.map((p) => [p.id, p]));
      const decision = decide(demand, products, (p) => p.stock);
      const [next, fields]: [OrderStatus, StatusFields] =
        decision.status === 'completed'
          ? ['completed', { totalAmount: decision.total, failureReason: null, linePrices: [...products.values()], stock: demand.map((d) => ({ productId: d.productId, delta: -d.quantity })) }]
          : ['failed', { failureReason: decision.reason, details: decision.details }];
      if (commitWithOutcome) {
        const last = await changeOrderStatusLast(trx, this.orderEvents, order, next, fields);
        if (last !== 'listened') return last === 'again' ? last : last.status;
      }
      return (await changeOrderStatus(trx, this.orderEvents, order, next, fields)).status;
    });
  }

  /**
   * The dead-letter handler: pg-boss gave up on the order's job without the handler recording it
   * (the last attempt expired or lost its worker, or the handler's own `fail` threw). Fails the order
   * with PROCESSING_ERROR like a last attempt does. Changes nothing when the order is final already, or
   * when it was retried after the given-up job was created (a newer job owns it now), so running it
   * again, or late, is harmless. Returns whether it failed the order.
   */
  async abandon(job: Job<'order-process-dead-letter'>): Promise<boolean> {
    const { orderId } = job.data;
    const requeuedAfter = job.sourceCreatedOn === null ? undefined : new Date(new Date(job.sourceCreatedOn).getTime() + REQUEUE_MARGIN_MS);
    const failed = await this.failUnlessFinal(orderId, 'PROCESSING_ERROR', requeuedAfter);
    if (failed) {
      this.log.error({ orderId, ...givenUpJob(job) }, 'order processing given up by the queue; order failed');
    }
    return failed;
  }

  /** Marks a not-yet-final order failed (the last attempt gave up). */
  async fail(orderId: number, reason: FailureReason): Promise<void> {
    await this.hooks.beforeFail?.(orderId);
    await this.failUnlessFinal(orderId, reason);
  }

  /**
   * Fails the order unless it is final already, or (with `requeuedAfter`) was retried after that
   * time, when a newer job owns it. An order still `pending` (every attempt failed before its move
   * to `processing` committed) goes through `processing` first, in the same transaction: the only
   * transitions are pending → processing → completed | failed (and a cancellation from any of
   * pending, processing, completed), and subscribers see each of them. Returns whether it failed the order.
   */
  private async failUnlessFinal(orderId: number, reason: FailureReason, requeuedAfter?: Date): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const order = await lockOrder(trx, orderId);
      if (!order || order.status === 'completed' || order.status === 'failed' || order.status === 'cancelled') return false;
      if (requeuedAfter && (await requeuedSince(trx, orderId, requeuedAfter))) return false;
      const from = order.status === 'pending' ? await changeOrderStatus(trx, this.orderEvents, order, 'processing') : order;
      await changeOrderStatus(trx, this.orderEvents, from, 'failed', { failureReason: reason });
      return true;
    });
  }
}
