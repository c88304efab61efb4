import type { Db } from '../../db/database.ts';
import type { UserRow, WebhookDeliveryRow, WebhookMessageRow, WebhookSubscriptionRow } from '../../db/schema.ts';
import { pageOf, type PageResult } from '../../http/common.schemas.ts';
import { AppError } from '../../http/errors.ts';
import type { WebhookDeliveryService } from './delivery.service.ts';
import {
  failedMessagesSince,
  findMessage,
  listDeliveries,
  listMessageAttempts,
  type DeliveryListRow,
  type MessageState,
} from './messages.repository.ts';
import type { DeliveryListQuery } from './outbound-webhooks.schemas.ts';
import type { SubscriptionsService } from './subscriptions.service.ts';

const messageNotFound = () => new AppError('NOT_FOUND', 'Message not found');

function assertEnabled(subscription: WebhookSubscriptionRow, action: string): void {
  if (!subscription.is_active) throw new AppError('INVALID_STATE', `Subscription is disabled; enable it before ${action}`);
}

/** A subscription's delivery log and messages, and sending them again (resend one, recover the failed). */
export class WebhookMessagesService {
  private readonly deps: { db: Db; subscriptions: SubscriptionsService; delivery: WebhookDeliveryService };

  constructor(deps: WebhookMessagesService['deps']) {
    this.deps = deps;
  }

  /** Attempts, newest first; `status` filters on the state of each attempt's message now. */
  async deliveries(actor: UserRow, id: number, q: DeliveryListQuery): Promise<PageResult<DeliveryListRow>> {
    await this.deps.subscriptions.get(actor, id);
    const { rows, total } = await listDeliveries(this.deps.db, {
      subscriptionId: id,
      limit: q.page_size,
      offset: (q.page - 1) * q.page_size,
      ...(q.status !== undefined ? { status: q.status as MessageState } : {}),
      ...(q.event_type !== undefined ? { eventType: q.event_type } : {}),
      ...(q.order_id !== undefined ? { orderId: q.order_id } : {}),
    });
    return pageOf(rows, total, q.page, q.page_size);
  }

  async message(actor: UserRow, id: number, messageId: string): Promise<{ message: WebhookMessageRow; attempts: WebhookDeliveryRow[] }> {
    await this.deps.subscriptions.get(actor, id);
    const message = await findMessage(this.deps.db, id, messageId);
    if (!message) throw messageNotFound();
    return { message, attempts: await listMessageAttempts(this.deps.db, id, messageId) };
  }

  /** Sends a settled message again with the same `webhook-id`, back into its order's lane. */
  async resend(actor: UserRow, id: number, messageId: string): Promise<{ waiting: boolean }> {
    const subscription = await this.deps.subscriptions.get(actor, id);
    assertEnabled(subscription, 'resending a message');
    const message = await findMessage(this.deps.db, id, messageId);
    if (!message) throw messageNotFound();
    const { requeued, sentNow } = await this.deps.db.transaction().execute((trx) => this.deps.delivery.requeue(trx, subscription, [message]));
    if (requeued.length === 0) {
      throw new AppError('INVALID_STATE', 'Message is still pending: it is being delivered or waits for an earlier message of its order');
    }
    return { waiting: !sentNow.includes(message.id) };
  }

  /** Queues again every message of the subscription that failed for good at or after `since`. */
  async recover(actor: UserRow, id: number, since: Date): Promise<number> {
    const subscription = await this.deps.subscriptions.get(actor, id);
    assertEnabled(subscription, 'recovering messages');
    return this.deps.db.transaction().execute(async (trx) => {
      const failed = await failedMessagesSince(trx, id, since);
      const { requeued } = await this.deps.delivery.requeue(trx, subscription, failed);
      return requeued.length;
    });
  }
}
