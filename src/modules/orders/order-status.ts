import type { Transaction } from 'kysely';
import type { Database, OrderRow, OrderStatus } from '../../db/schema.ts';
import type { OrderEventBus } from './order-events.ts';
import { updateOrder } from './orders.repository.ts';

/**
 * Moves a locked order to `next` and records `order.status_changed` in the same transaction.
 * `order` must have been read with `lockOrder` in `trx`.
 */
export async function changeOrderStatus(
  trx: Transaction<Database>,
  orderEvents: OrderEventBus,
  order: OrderRow,
  next: OrderStatus,
  fields: { failureReason?: string | null; totalAmount?: string | number } = {},
): Promise<OrderRow> {
  const updated = await updateOrder(trx, order.id, {
    status: next,
    updated_at: new Date(),
    ...(fields.failureReason !== undefined ? { failure_reason: fields.failureReason } : {}),
    ...(fields.totalAmount !== undefined ? { total_amount: fields.totalAmount } : {}),
  });
  await orderEvents.record(trx, {
    orderId: updated.id,
    userId: updated.user_id,
    type: 'order.status_changed',
    previousStatus: order.status,
    status: next,
    totalAmount: updated.total_amount,
  });
  return updated;
}
