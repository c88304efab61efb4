import type { Transaction } from 'kysely';
import type { Database, OrderRow } from '../../db/schema.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { OrderEventBus } from './order-events.ts';

/** The background job that prices an order and reserves its stock (see order-processor.ts). */
export const ORDER_PROCESS_QUEUE = 'order-process';

export interface OrderProcessJob {
  orderId: number;
}

export interface NewOrderInput {
  userId: number;
  shippingAddress: string;
  lines: { productId: number; quantity: number }[];
  /** where the order came from: 'api' (default) or an inbound platform */
  source?: string;
  /** the platform's own order id, unique per source */
  externalId?: string | null;
}

/**
 * Inserts a pending order (total 0) with its lines (unit price 0), records `order.created` and
 * enqueues the processing job, all on `trx`: the order can never exist without its job and event.
 * Products are not validated here: callers check them first.
 */
export async function insertOrderWithJob(
  trx: Transaction<Database>,
  deps: { queue: JobQueue; orderEvents: OrderEventBus },
  input: NewOrderInput,
): Promise<OrderRow> {
  const order = await trx
    .insertInto('orders')
    .values({
      user_id: input.userId,
      status: 'pending',
      total_amount: 0,
      shipping_address: input.shippingAddress,
      failure_reason: null,
      source: input.source ?? 'api',
      external_id: input.externalId ?? null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  if (input.lines.length > 0) {
    await trx
      .insertInto('order_items')
      .values(
        input.lines.map((line) => ({
          order_id: order.id,
          product_id: line.productId,
          product_name: null,
          quantity: line.quantity,
          unit_price: 0,
        })),
      )
      .execute();
  }
  await deps.orderEvents.record(trx, {
    orderId: order.id,
    userId: order.user_id,
    type: 'order.created',
    previousStatus: null,
    status: 'pending',
    totalAmount: order.total_amount,
  });
  const job: OrderProcessJob = { orderId: order.id };
  await deps.queue.send(trx, ORDER_PROCESS_QUEUE, job);
  return order;
}
