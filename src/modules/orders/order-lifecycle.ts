import type { Transaction } from 'kysely';
import type { Database, OrderRow, OrderStatus } from '../../db/schema.ts';
import type { OrderEventBus } from '../../events/order-events.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import { insertOrder, insertOrderEvent, updateOrder, type NewOrder } from './orders.repository.ts';

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
  const updated = await updateOrder(trx, order.id, {
    status: next,
    updated_at: new Date(),
    ...(fields.failureReason !== undefined ? { failure_reason: fields.failureReason } : {}),
    ...(fields.totalAmount !== undefined ? { total_amount: fields.totalAmount } : {}),
  });
  const event = await insertOrderEvent(trx, {
    orderId: updated.id,
    userId: updated.user_id,
    type: 'order.status_changed',
    previousStatus: order.status,
    status: next,
    totalAmount: updated.total_amount,
    reason: next === 'failed' ? (fields.failureReason ?? null) : null,
    details: next === 'failed' ? (fields.details ?? null) : null,
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
  const order = await insertOrder(trx, input);
  const event = await insertOrderEvent(trx, {
    orderId: order.id,
    userId: order.user_id,
    type: 'order.created',
    previousStatus: null,
    status: 'pending',
    totalAmount: order.total_amount,
  });
  await deps.orderEvents.publish(trx, event, order);
  await deps.queue.send(trx, 'order-process', { orderId: order.id });
  return order;
}
