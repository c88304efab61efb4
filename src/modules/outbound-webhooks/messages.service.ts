import type { Db } from '../../db/database.ts';
import type { UserRow, WebhookDeliveryRow, WebhookMessageRow, WebhookSubscriptionRow } from '../../db/schema.ts';
import { cappedPageOf, pageOf, type CappedPageResult, type PageResult } from '../../http/common.schemas.ts';
import { AppError } from '../../http/errors.ts';
import type { WebhookDeliveryService } from './delivery.service.ts';
import {
  countAttemptsPerBucket,
  failedMessagesSince,
  findMessage,
  listAttemptsOf,
  listDeliveries,
  listMessages,
  type DeliveryListRow,
  type MessageState,
} from './messages.repository.ts';
import type { DeliveryListQuery, MessageListQuery, StatsQuery } from './outbound-webhooks.schemas.ts';
import type { SubscriptionsService } from './subscriptions.service.ts';

const BUCKET_MS = { hour: 3600_000, day: 86400_000 } as const;
const DEFAULT_RANGE_MS = { hour: 24 * BUCKET_MS.hour, day: 30 * BUCKET_MS.day } as const;
/** A month of hours: the most buckets one answer has. */
const MAX_BUCKETS = 744;

export interface BucketCounts {
  start: Date;
  succeeded: number;
  failed: number;
}

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

  /** Messages, newest first, each with its attempts (oldest first). */
  async messages(
    actor: UserRow,
    id: number,
    q: MessageListQuery,
  ): Promise<CappedPageResult<{ message: WebhookMessageRow; attempts: WebhookDeliveryRow[] }>> {
    await this.deps.subscriptions.get(actor, id);
    const { rows, count } = await listMessages(this.deps.db, {
      subscriptionId: id,
      limit: q.page_size,
      offset: (q.page - 1) * q.page_size,
      ...(q.status !== undefined ? { status: q.status } : {}),
      ...(q.event_type !== undefined ? { eventType: q.event_type } : {}),
    });
    const attempts = Map.groupBy(await listAttemptsOf(this.deps.db, id, rows.map((m) => m.message_id)), (a) => a.message_id);
    const items = rows.map((message) => ({ message, attempts: attempts.get(message.message_id) ?? [] }));
    return cappedPageOf(items, count, q.page, q.page_size);
  }

  /**
   * Attempts per UTC hour or day by outcome, every bucket of the range present (zeros included):
   * `from` is aligned down to its bucket; 422 when it is not before `to` or the range has more than
   * MAX_BUCKETS buckets.
   */
  async stats(actor: UserRow, id: number, q: StatsQuery): Promise<{ bucket: 'hour' | 'day'; from: Date; to: Date; buckets: BucketCounts[] }> {
    await this.deps.subscriptions.get(actor, id);
    const bucket = q.bucket ?? 'hour';
    const size = BUCKET_MS[bucket];
    const to = q.to === undefined ? new Date() : new Date(q.to);
    const asked = q.from === undefined ? to.getTime() - DEFAULT_RANGE_MS[bucket] : new Date(q.from).getTime();
    // UTC days and hours are whole multiples of their length since the epoch
    const from = new Date(Math.floor(asked / size) * size);
    const problem = from >= to ? '`from` must be before `to`' : (to.getTime() - from.getTime()) / size > MAX_BUCKETS ? `at most ${MAX_BUCKETS} buckets` : '';
    if (problem) {
      throw new AppError('VALIDATION_ERROR', `Validation failed: querystring.from: ${problem}`, {
        errors: [{ loc: ['querystring', 'from'], msg: problem, type: 'value_error' }],
      });
    }
    const counted = new Map((await countAttemptsPerBucket(this.deps.db, { subscriptionId: id, bucket, from, to })).map((b) => [b.start.getTime(), b]));
    const buckets: BucketCounts[] = [];
    for (let t = from.getTime(); t < to.getTime(); t += size) buckets.push(counted.get(t) ?? { start: new Date(t), succeeded: 0, failed: 0 });
    return { bucket, from, to, buckets };
  }

  async message(actor: UserRow, id: number, messageId: string): Promise<{ message: WebhookMessageRow; attempts: WebhookDeliveryRow[] }> {
    await this.deps.subscriptions.get(actor, id);
    const message = await findMessage(this.deps.db, id, messageId);
    if (!message) throw messageNotFound();
    return { message, attempts: await listAttemptsOf(this.deps.db, id, [messageId]) };
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
