import type { AppContext, AppModule } from '../../app-context.ts';
import { deadLetterQueueOf } from '../../jobs/queue.ts';
import { ORDER_PROCESS_QUEUE, type OrderProcessJob } from './order-create.ts';
import { OrderProcessor } from './order-processor.ts';
import { purgeExpiredIdempotencyKeys } from './orders.repository.ts';
import { registerOrderRoutes } from './orders.routes.ts';
import { OrdersService } from './orders.service.ts';

export const PURGE_IDEMPOTENCY_KEYS_QUEUE = 'idempotency-keys-purge';
/** Receives each order job pg-boss gave up on: its handler fails the order (DESIGN §4, PROCESSING_ERROR). */
export const ORDER_PROCESS_DEAD_LETTER_QUEUE = deadLetterQueueOf(ORDER_PROCESS_QUEUE);

const processors = new WeakMap<AppContext, OrderProcessor>();

/** The order processor of an app (tests use it to inject faults through its hooks). */
export function orderProcessorOf(ctx: AppContext): OrderProcessor {
  const processor = processors.get(ctx);
  if (!processor) throw new Error('the orders module is not registered');
  return processor;
}

/** Orders, their background processing and the Idempotency-Key store. */
export const ordersModule: AppModule = (api, ctx) => {
  const orders = new OrdersService({ db: ctx.db, queue: ctx.queue, orderEvents: ctx.orderEvents });
  registerOrderRoutes(api, orders);

  const processor = new OrderProcessor({ db: ctx.db, orderEvents: ctx.orderEvents, log: ctx.log });
  processors.set(ctx, processor);
  ctx.queue.define({ name: ORDER_PROCESS_QUEUE });
  ctx.queue.work<OrderProcessJob>(ORDER_PROCESS_QUEUE, (job) => processor.handle(job), ctx.config.orderWorkerConcurrency);
  ctx.queue.workGivenUp<OrderProcessJob>(ORDER_PROCESS_QUEUE, async (job) => {
    await processor.abandon(job);
  });

  ctx.queue.define({ name: PURGE_IDEMPOTENCY_KEYS_QUEUE });
  ctx.queue.work(PURGE_IDEMPOTENCY_KEYS_QUEUE, async () => {
    const purged = await purgeExpiredIdempotencyKeys(ctx.db);
    if (purged > 0) ctx.log.info({ purged }, 'purged expired idempotency keys');
  });
  ctx.queue.scheduleCron(PURGE_IDEMPOTENCY_KEYS_QUEUE, '23 * * * *');
};
