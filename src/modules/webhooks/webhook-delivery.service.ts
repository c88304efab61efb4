import crypto from 'node:crypto';
import type { Transaction } from 'kysely';
import type { Dispatcher } from 'undici';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import type { Database, OrderEventRow, WebhookMessageRow, WebhookSubscriptionRow } from '../../db/schema.ts';
import { iso } from '../../http/common.schemas.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import { ORDER_EVENT_TYPES } from '../orders/order-events.ts';
import {
  findMessageWithSubscription,
  insertDeliveryAttempt,
  insertMessage,
  laneBusy,
  lockMessageLane,
  noteFailedAttempt,
  releaseNextInLane,
  settleMessage,
} from './messages.repository.ts';
import { matchingSubscriptionIds, recordSubscriptionFailure, resetSubscriptionFailures } from './subscriptions.repository.ts';
import { sendSignedMessage, type AttemptResult } from './webhook-sender.ts';

/** Outgoing deliveries: retries are scheduled here (a new job per attempt), not by pg-boss. */
export const WEBHOOK_DELIVER_QUEUE = 'webhook-deliver';
export const WEBHOOK_TEST_EVENT = 'webhook.test';
/** A subscription whose last N messages all failed (after every retry) is disabled. */
export const DISABLE_AFTER_FAILED_MESSAGES = 20;
const DELIVERY_JITTER = 0.2;

export interface DeliverJob {
  /** webhook_messages.id */
  messageRowId: number;
  attempt: number;
}

/** The envelope of an order event (DESIGN §6); `id` names the event, `webhook-id` the message. */
export function orderEventEnvelope(event: OrderEventRow) {
  return {
    id: `evt_${event.id}`,
    type: event.type,
    timestamp: iso(event.created_at),
    data: {
      order_id: event.order_id,
      user_id: event.user_id,
      previous_status: event.previous_status,
      status: event.status,
      total_amount: Number(event.total_amount),
      sequence: event.sequence,
    },
  };
}

/** Stable across every retry of one event to one subscription. */
export function messageIdFor(eventId: number, subscriptionId: number): string {
  return `msg_${eventId}_${subscriptionId}`;
}

/** The delay before attempt `attempt + 1`, from the configured schedule, with ±10 % jitter. */
export function retryDelayMs(schedule: readonly number[], attempt: number): number | undefined {
  const base = schedule[attempt - 1];
  if (base === undefined) return undefined;
  return Math.round(base * 1000 * (1 - DELIVERY_JITTER / 2 + Math.random() * DELIVERY_JITTER));
}

export class WebhookDeliveryService {
  private readonly db: Db;
  private readonly queue: JobQueue;
  private readonly config: Config;
  private readonly dispatcher: Dispatcher;
  private readonly log: FastifyBaseLogger;

  constructor(deps: { db: Db; queue: JobQueue; config: Config; dispatcher: Dispatcher; log: FastifyBaseLogger }) {
    this.db = deps.db;
    this.queue = deps.queue;
    this.config = deps.config;
    this.dispatcher = deps.dispatcher;
    this.log = deps.log;
  }

  /**
   * Runs in the transaction that wrote the order event: one message per matching subscription.
   * A message waits ('held') while an earlier message of the same order to the same subscription is
   * still pending, so a receiver gets one order's events in sequence.
   */
  async fanOut(trx: Transaction<Database>, event: OrderEventRow): Promise<void> {
    if (!(ORDER_EVENT_TYPES as readonly string[]).includes(event.type)) return;
    const subscriptionIds = await matchingSubscriptionIds(trx, event.type, event.user_id);
    if (subscriptionIds.length === 0) return;
    const payload = JSON.stringify(orderEventEnvelope(event));
    for (const subscriptionId of subscriptionIds) {
      await lockMessageLane(trx, subscriptionId, event.order_id);
      const busy = await laneBusy(trx, subscriptionId, event.order_id);
      const message = await insertMessage(trx, {
        messageId: messageIdFor(event.id, subscriptionId),
        subscriptionId,
        eventId: event.id,
        orderId: event.order_id,
        eventType: event.type,
        payload,
        status: busy ? 'held' : 'queued',
      });
      if (!busy) await this.enqueue(trx, { messageRowId: message.id, attempt: 1 });
    }
  }

  /** A `webhook.test` message to one subscription, outside any order lane. */
  async sendTest(subscription: WebhookSubscriptionRow): Promise<string> {
    const id = crypto.randomBytes(12).toString('hex');
    const messageId = `msg_test_${id}`;
    const payload = JSON.stringify({
      id: `evt_test_${id}`,
      type: WEBHOOK_TEST_EVENT,
      timestamp: new Date().toISOString(),
      data: { subscription_id: subscription.id, message: 'This is a test event.' },
    });
    await this.db.transaction().execute(async (trx) => {
      const message = await insertMessage(trx, {
        messageId,
        subscriptionId: subscription.id,
        eventId: null,
        orderId: null,
        eventType: WEBHOOK_TEST_EVENT,
        payload,
        status: 'queued',
      });
      await this.enqueue(trx, { messageRowId: message.id, attempt: 1 });
    });
    return messageId;
  }

  private async enqueue(trx: Transaction<Database>, job: DeliverJob, delayMs = 0): Promise<void> {
    await this.queue.send(trx, WEBHOOK_DELIVER_QUEUE, job, delayMs > 0 ? { startAfter: new Date(Date.now() + delayMs) } : {});
  }

  /** One attempt of one message (the job handler). Never throws for a receiver's failure. */
  async deliver(job: DeliverJob): Promise<void> {
    const found = await findMessageWithSubscription(this.db, job.messageRowId);
    if (!found || found.message.status !== 'queued') return; // settled already (a repeated job)
    const { message, subscription } = found;
    if (!subscription.is_active || subscription.deleted_at !== null) {
      await this.settle(message, { status: 'failed', attempts: message.attempts, error: 'subscription is disabled or deleted' });
      return;
    }
    const result = await sendSignedMessage(
      this.dispatcher,
      { url: subscription.url, secret: subscription.secret, messageId: message.message_id, body: message.payload },
      { allowPrivate: this.config.webhookAllowPrivateTargets },
    );
    await this.recordAttempt(message, job.attempt, result);
  }

  private async recordAttempt(message: WebhookMessageRow, attempt: number, result: AttemptResult): Promise<void> {
    const attemptRow = {
      subscriptionId: message.subscription_id,
      eventId: message.event_id,
      eventType: message.event_type,
      messageId: message.message_id,
      attempt,
      statusCode: result.statusCode,
      durationMs: result.durationMs,
      success: result.success,
      error: result.error,
    };
    if (result.success) {
      await this.settle(message, { status: 'delivered', attempts: attempt, error: null }, async (trx) => {
        await insertDeliveryAttempt(trx, attemptRow);
        await resetSubscriptionFailures(trx, message.subscription_id);
      });
      return;
    }
    const gone = result.statusCode === 410;
    const delay = gone ? undefined : retryDelayMs(this.config.webhookRetrySchedule, attempt);
    if (delay !== undefined) {
      await this.db.transaction().execute(async (trx) => {
        await insertDeliveryAttempt(trx, attemptRow);
        await noteFailedAttempt(trx, message.id, attempt, result.error);
        await this.enqueue(trx, { messageRowId: message.id, attempt: attempt + 1 }, delay);
      });
      return;
    }
    this.log.warn({ subscriptionId: message.subscription_id, messageId: message.message_id, attempt, error: result.error }, 'webhook message failed');
    await this.settle(message, { status: 'failed', attempts: attempt, error: result.error }, async (trx) => {
      await insertDeliveryAttempt(trx, attemptRow);
      await recordSubscriptionFailure(trx, message.subscription_id, {
        disableAfter: DISABLE_AFTER_FAILED_MESSAGES,
        ...(gone ? { disableReason: 'receiver answered 410 Gone' } : {}),
      });
    });
  }

  /** Final state of a message, plus the release of the next message of its lane, in one transaction. */
  private async settle(
    message: WebhookMessageRow,
    outcome: { status: 'delivered' | 'failed'; attempts: number; error: string | null },
    alsoInTransaction?: (trx: Transaction<Database>) => Promise<void>,
  ): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      if (message.order_id !== null) await lockMessageLane(trx, message.subscription_id, message.order_id);
      if (!(await settleMessage(trx, message.id, outcome))) return;
      if (alsoInTransaction) await alsoInTransaction(trx);
      if (message.order_id === null) return;
      const next = await releaseNextInLane(trx, message.subscription_id, message.order_id);
      if (next !== undefined) await this.enqueue(trx, { messageRowId: next, attempt: 1 });
    });
  }
}
