import type { AppContext, AppModule } from '../../app-context.ts';
import { HOUSEKEEPING_RETRY } from '../../jobs/queue.ts';
import { PUBLISH_QUEUE, publishEvents } from './order-lifecycle.ts';
import { OrderProcessor, type OrderProcessorHooks } from './order-processor.ts';
import { purgeExpiredIdempotencyKeys } from './orders.changes.repository.ts';
import { registerOrderRoutes } from './orders.routes.ts';
import { OrdersAdminService, OrdersService } from './orders.service.ts';

export interface OrdersModule extends AppModule {
  readonly service: OrdersService;
  /** every order, for administrators and the order trace */
  readonly admin: OrdersAdminService;
}

/** Orders, their background processing, the Idempotency-Key store and the administrators' order console. */
export function createOrdersModule(ctx: AppContext, opts: { hooks?: OrderProcessorHooks } = {}): OrdersModule {
  const { db, queue, log } = ctx;
  const service = new OrdersService({ db, queue });
  const processor = new OrderProcessor({ db, queue, log, hooks: opts.hooks });
  // POST /orders sends one per order: its link costs the request nothing (src/jobs/job-policies.ts)
  queue.define({ name: 'order-process', linkWhenTaken: true });
  queue.work('order-process', (job) => processor.handle(job), ctx.config.orderWorkerConcurrency, { together: (jobs) => processor.handleBatch(jobs) });
  queue.workGivenUp('order-process', (job) => processor.abandon(job));
  // Publishing is woken after each change's commit, and runs every minute for a wake that was lost;
  // one job waiting and one running at most: a run publishes every event committed before it starts.
  queue.define({ name: PUBLISH_QUEUE, policy: 'stately', batchSize: 1 });
  queue.work(PUBLISH_QUEUE, () => publishEvents(db, ctx.orderEvents));
  queue.scheduleCron(PUBLISH_QUEUE, '* * * * *');
  queue.define({ name: 'idempotency-keys-purge', ...HOUSEKEEPING_RETRY });
  queue.work('idempotency-keys-purge', async () => {
    const purged = await purgeExpiredIdempotencyKeys(db);
    if (purged > 0) log.info({ purged }, 'purged expired idempotency keys');
  });
  queue.scheduleCron('idempotency-keys-purge', '23 * * * *');
  const admin = new OrdersAdminService({ db });
  return {
    service,
    admin,
    routes: (api) => registerOrderRoutes(api, service, admin, ctx.config.currency),
  };
}
