import type { Db } from '../../db/database.ts';
import type { WebhookDeliveryRow } from '../../db/schema.ts';
import type { JobQueue, JobRecord } from '../../jobs/queue.ts';
import { findInboundWebhooksForOrder, type InboundWebhookSummaryRow } from '../inbound-webhooks/inbound-webhooks.repository.ts';
import type { OrderRecord, OrdersAdminService } from '../orders/orders.admin.service.ts';
import { findMessageAttempts, findOrderMessages, type OrderMessageRow } from '../outbound-webhooks/trace.repository.ts';

/** Everything recorded about one order, from each module that recorded part of it. */
export interface OrderTrace {
  record: OrderRecord;
  inbound: InboundWebhookSummaryRow[];
  jobs: JobRecord[];
  messages: OrderMessageRow[];
  attempts: WebhookDeliveryRow[];
}

/**
 * The whole story of one order: the platform webhooks that created or were linked to it, the order
 * with its events, every job run for it, for those webhooks and for its outgoing messages, and each
 * message with its attempts. Each part comes from the module that owns it; this module depends on
 * all of them and none of them on it.
 */
export async function traceOrder(
  deps: { db: Db; queue: JobQueue; orders: OrdersAdminService },
  orderId: number,
): Promise<OrderTrace> {
  const record = await deps.orders.get(orderId);
  const [inbound, messages] = await Promise.all([findInboundWebhooksForOrder(deps.db, orderId), findOrderMessages(deps.db, orderId)]);
  const [attempts, jobs] = await Promise.all([
    findMessageAttempts(
      deps.db,
      messages.map((m) => m.message_id),
    ),
    deps.queue.jobsAbout({ orderId, inboundWebhookIds: inbound.map((i) => i.id), messageRowIds: messages.map((m) => m.id) }),
  ]);
  return { record, inbound, jobs, messages, attempts };
}
