import type { Db } from '../../db/database.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import { findInboundWebhooksForOrder } from '../inbound-webhooks/inbound-webhooks.repository.ts';
import type { OrdersAdminService } from '../orders/orders.service.ts';
import { findMessageAttempts, findOrderMessages } from '../outbound-webhooks/trace.repository.ts';

/** Everything recorded about one order, from each module that recorded part of it. */
export type OrderTrace = Awaited<ReturnType<typeof traceOrder>>;

/** The whole story of one order, each part read from the module that owns it. */
export async function traceOrder(deps: { db: Db; queue: JobQueue; orders: OrdersAdminService }, orderId: number) {
  const record = await deps.orders.get(orderId);
  const [inbound, messages] = await Promise.all([findInboundWebhooksForOrder(deps.db, orderId), findOrderMessages(deps.db, orderId)]);
  const [attempts, jobs] = await Promise.all([
    findMessageAttempts(deps.db, messages.map((m) => m.message_id)),
    deps.queue.jobsAbout({ orderId, inboundWebhookIds: inbound.map((i) => i.id), messageRowIds: messages.map((m) => m.id) }),
  ]);
  return { record, inbound, jobs, messages, attempts };
}
