import type { AppContext, AppModule } from '../../app-context.ts';
import { OrderProcessor, type OrderProcessorHooks } from './order-processor.ts';
import { registerOrderAdminRoutes } from './orders.admin.routes.ts';
import { OrdersAdminService } from './orders.admin.service.ts';
import { registerOrderJobs } from './orders.jobs.ts';
import { registerOrderRoutes } from './orders.routes.ts';
import { OrdersService } from './orders.service.ts';

export interface OrdersModule extends AppModule {
  readonly service: OrdersService;
  /** every order, for administrators and the order trace */
  readonly admin: OrdersAdminService;
}

/** Orders, their background processing, the Idempotency-Key store and the administrators' order console. */
export function createOrdersModule(ctx: AppContext, opts: { hooks?: OrderProcessorHooks } = {}): OrdersModule {
  const service = new OrdersService({ db: ctx.db, queue: ctx.queue });
  const processor = new OrderProcessor({ db: ctx.db, queue: ctx.queue, log: ctx.log, hooks: opts.hooks });
  registerOrderJobs(ctx.queue, { db: ctx.db, log: ctx.log, processor, orderEvents: ctx.orderEvents, concurrency: ctx.config.orderWorkerConcurrency });
  const admin = new OrdersAdminService({ db: ctx.db });
  return {
    service,
    admin,
    routes: (api) => {
      registerOrderRoutes(api, service);
      registerOrderAdminRoutes(api, admin, ctx.config.currency);
    },
  };
}
