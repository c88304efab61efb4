import type { FastifyInstance } from 'fastify';
import type { OrderRow } from '../../src/db/schema.ts';
import { OrderProcessor, type OrderProcessorHooks } from '../../src/modules/orders/order-processor.ts';
import { waitFor } from './app.ts';

/**
 * A processor of the app's orders beside its worker's (another worker, as far as the orders can
 * tell), with the fault hooks the app was built with.
 */
export function processorFor(app: FastifyInstance, hooks: OrderProcessorHooks): OrderProcessor {
  return new OrderProcessor({ db: app.ctx.db, queue: app.ctx.queue, log: app.ctx.log, hooks });
}

/** Removes every fault hook: the jobs run as in production again. */
export function clearHooks(hooks: object): void {
  for (const key of Object.keys(hooks)) delete (hooks as Record<string, unknown>)[key];
}

/** Polls the database until the order reaches completed or failed. */
export async function waitForFinal(app: FastifyInstance, orderId: number, timeoutMs = 20000): Promise<OrderRow> {
  return waitFor(async () => {
    const row = await app.ctx.db.selectFrom('orders').selectAll().where('id', '=', orderId).executeTakeFirst();
    return row && (row.status === 'completed' || row.status === 'failed') ? row : undefined;
  }, timeoutMs);
}

/**
 * Polls until every order event has been handed to the listeners (the publishing job runs after the
 * commit, up to 50 ms later under a burst): a subscription made after this gets none of them.
 */
export async function waitForPublished(app: FastifyInstance, timeoutMs = 20000): Promise<void> {
  await waitFor(async () => {
    const row = await app.ctx.db.selectFrom('order_events').select('id').where('published', '=', false).limit(1).executeTakeFirst();
    return row === undefined ? true : undefined;
  }, timeoutMs);
}

export async function eventsOf(app: FastifyInstance, orderId: number) {
  return app.ctx.db
    .selectFrom('order_events')
    .select(['type', 'previous_status', 'status', 'sequence', 'total_amount'])
    .where('order_id', '=', orderId)
    .orderBy('sequence', 'asc')
    .execute();
}
