import type { Transaction } from 'kysely';
import type { Database, OrderRow, OrderStatus } from '../../db/schema.ts';
import type { OrderEventBus } from '../../events/order-events.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import { insertOrderWithEvent, updateOrderWithEvent, type NewOrder } from './orders.repository.ts';

/** What a failure concerned: for a stock failure, each short line. */
export interface FailureDetails {
  lines: { product_id: number; requested: number; available: number }[];
}

/**
 * Moves a locked order to `next`, writes its `order.status_changed` event and publishes it, all in
 * `trx`. `order` must have been read with `lockOrder` in `trx`. A move to `failed` records the
 * failure reason (and its details) on the event as well as on the order.
 */
export async function changeOrderStatus(
  trx: Transaction<Database>,
  orderEvents: OrderEventBus,
  order: OrderRow,
  next: OrderStatus,
  fields: { failureReason?: string | null; totalAmount?: string | number; details?: FailureDetails } = {},
): Promise<OrderRow> {
  const { order: updated, event } = await updateOrderWithEvent(trx, order.id, {
    patch: {
      status: next,
      updated_at: new Date(),
      ...(fields.failureReason !== undefined ? { failure_reason: fields.failureReason } : {}),
      ...(fields.totalAmount !== undefined ? { total_amount: fields.totalAmount } : {}),
    },
    event: {
      type: 'order.status_changed',
      previousStatus: order.status,
      reason: next === 'failed' ? (fields.failureReason ?? null) : null,
      details: next === 'failed' ? (fields.details ?? null) : null,
    },
  });
  await orderEvents.publish(trx, event, updated);
  return updated;
}

/**
 * Inserts a pending order with its lines, writes and publishes `order.created`, and enqueues the
 * processing job, all in `trx`: the order can never exist without its job and its event. Products
 * are not validated here: callers check them first.
 */
export async function placeOrder(
  trx: Transaction<Database>,
  deps: { orderEvents: OrderEventBus; queue: JobQueue },
  input: NewOrder,
): Promise<OrderRow> {
  const { order, event } = await insertOrderWithEvent(trx, input);
  await deps.orderEvents.publish(trx, event, order);
  await deps.queue.send(trx, 'order-process', { orderId: order.id });
  return order;
}
