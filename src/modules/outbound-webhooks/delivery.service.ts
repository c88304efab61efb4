import { trace } from '@opentelemetry/api';
import { sql, type Transaction } from 'kysely';
import type { Dispatcher } from 'undici';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import type { Database, OrderEventRow, WebhookMessageRow, WebhookSubscriptionRow } from '../../db/schema.ts';
import { ORDER_EVENT_TYPES, type OrderEventOf, type WebhookEventKind } from '../../events/order-events.ts';
import type { ApiVersion } from '../../http/api-version.ts';
import { AppError } from '../../http/errors.ts';
import { activeTraceparent } from '../../jobs/job-tracing.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { JobPayloads } from '../../jobs/registry.ts';
import {
  findMessageWithSubscription,
  insertDeliveryAttempt,
  insertMessage,
  laneHas,
  lockMessageLane,
  failPendingMessages,
  noteFailedAttempt,
  releaseNextInLane,
  requeueMessages,
  settleMessage,
  type MessageToSend,
} from './messages.repository.ts';
import { kindsOf, messageIdFor, orderEventEnvelope, testMessage, WEBHOOK_TEST_EVENT, type WebhookEventType } from './message-rendering.ts';
import { destinationOf, sendSignedMessage, type AttemptResult } from './sender.ts';
import { overlapEnd } from './signing.ts';
import { lockActiveSubscriptions, lockSubscription, matchingSubscriptions, recordSubscriptionFailure, resetSubscriptionFailures, type MatchingSubscription } from './subscriptions.repository.ts';
import { webhookDeliveryAttempts } from './outbound-webhooks.metrics.ts';

/** A subscription whose last N messages all failed (after every retry) is disabled. */
export const DISABLE_AFTER_FAILED_MESSAGES = 20;
/** Why a disabled or deleted subscription's pending messages failed. */
export const SUBSCRIPTION_GONE_ERROR = 'subscription is disabled or deleted';
const DELIVERY_JITTER = 0.2;

/** The delay before retry number `retry` (1 = the first), with ±10 % jitter. */
function retryDelayMs(schedule: readonly number[], retry: number): number | undefined {
  const base = schedule[retry - 1];
  if (base === undefined) return undefined;
  return Math.round(base * 1000 * (1 - DELIVERY_JITTER / 2 + Math.random() * DELIVERY_JITTER));
}

/**
 * Outgoing deliveries: each attempt is a job sent with its delay (pg-boss's retries cover only a
 * crash around one). One order's messages to one subscription form a lane: at most one is `queued`,
 * the later ones wait `held` and are released oldest first, resent ones included.
 */
export class WebhookDeliveryService {
  private readonly deps: { db: Db; queue: JobQueue; config: Config; dispatcher: () => Promise<Dispatcher>; log: FastifyBaseLogger };

  constructor(deps: WebhookDeliveryService['deps']) {
    this.deps = deps;
  }

  /**
   * The listener of order events: one message per matching subscription and kind it wants, in its
   * API version's rendering. Locks the lanes first, in (subscription, order) order, as a resend does.
   */
  async fanOut(trx: Transaction<Database>, changes: readonly OrderEventOf[]): Promise<void> {
    const events = changes.map((c) => c.event).filter((e) => (ORDER_EVENT_TYPES as readonly string[]).includes(e.type));
    if (events.length === 0) return;
    const owners = [...new Set(events.map((e) => e.user_id))];
    const subscriptions = await matchingSubscriptions(trx, sql`SELECT unnest(${owners}::integer[])`).execute();
    const sends: { event: OrderEventRow; subscription: MatchingSubscription; kinds: WebhookEventKind[] }[] = [];
    for (const event of events) {
      for (const subscription of subscriptions) {
        if (!subscription.all_orders && subscription.user_id !== event.user_id) continue;
        const kinds = kindsOf(event).filter((k) => subscription.events.includes(k));
        if (kinds.length > 0) sends.push({ event, subscription, kinds });
      }
    }
    const lanes = [...new Map(sends.map((s) => [`${s.subscription.id} ${s.event.order_id}`, [s.subscription.id, s.event.order_id]])).values()];
    for (const [subscriptionId, orderId] of lanes.sort(([s1, o1], [s2, o2]) => s1 - s2 || o1 - o2)) await lockMessageLane(trx, subscriptionId, orderId);
    // then the subscriptions (the lock order): one disabled or deleted meanwhile gets nothing, and none is until these messages commit
    const active = await lockActiveSubscriptions(trx, [...new Set(sends.map((s) => s.subscription.id))]);
    const payloads = new Map<string, string>();
    const payloadOf = (event: OrderEventRow, kind: WebhookEventKind, version: ApiVersion) => {
      const key = `${event.id} ${kind} ${version}`;
      let payload = payloads.get(key);
      if (payload === undefined) payloads.set(key, (payload = JSON.stringify(orderEventEnvelope(event, kind, version))));
      return payload;
    };
    // each message continues its event's trace (the change that wrote it), not the publishing job's
    const current = activeTraceparent();
    for (const { event, subscription, kinds } of sends) {
      if (!active.has(subscription.id)) continue;
      for (const kind of kinds) {
        const busy = await laneHas(trx, subscription.id, event.order_id, ['held', 'queued']);
        const message = await insertMessage(trx, {
          messageId: messageIdFor(event.id, subscription.id, kind, event.type),
          subscriptionId: subscription.id,
          eventId: event.id,
          orderId: event.order_id,
          eventType: kind,
          payload: payloadOf(event, kind, subscription.api_version),
          status: busy ? 'held' : 'queued',
          traceparent: event.traceparent ?? current,
        });
        if (!busy) await this.enqueue(trx, subscription, message);
      }
    }
  }

  /** A `webhook.test` message to one subscription, outside any order lane. */
  /** A sample message of `type` (default `webhook.test`), outside any order's lane. */
  async sendTest(subscription: WebhookSubscriptionRow, type: WebhookEventType = WEBHOOK_TEST_EVENT): Promise<string> {
    const { messageId, payload } = testMessage(subscription, type);
    await this.deps.db.transaction().execute(async (trx) => {
      const message = await insertMessage(trx, {
        messageId,
        subscriptionId: subscription.id,
        eventId: null,
        orderId: null,
        eventType: type,
        payload,
        status: 'queued',
        traceparent: activeTraceparent(),
      });
      await this.enqueue(trx, subscription, message);
    });
    return messageId;
  }

  /**
   * Puts settled messages of `subscription` back into delivery with a fresh retry schedule, each into
   * its lane. Returns the ids re-queued and, among them, those sent at once. Refused (INVALID_STATE)
   * when the subscription is disabled or deleted by the time its row is share-locked, after the
   * lanes and before the messages (the lock order of docs/architecture.md).
   */
  async requeue(
    trx: Transaction<Database>,
    subscription: WebhookSubscriptionRow,
    messages: readonly { id: number; order_id: number | null }[],
  ): Promise<{ requeued: number[]; sentNow: number[] }> {
    const lanes = new Map<number, number[]>();
    for (const m of messages) if (m.order_id !== null) lanes.set(m.order_id, [...(lanes.get(m.order_id) ?? []), m.id]);
    const orderIds = [...lanes.keys()].sort((a, b) => a - b);
    for (const orderId of orderIds) await lockMessageLane(trx, subscription.id, orderId);
    if (!(await lockActiveSubscriptions(trx, [subscription.id])).has(subscription.id)) {
      throw new AppError('INVALID_STATE', 'Subscription is disabled; enable it before sending its messages again');
    }
    const requeued: number[] = [];
    const sentNow: number[] = [];
    const laneless = messages.filter((m) => m.order_id === null).map((m) => m.id);
    for (const row of await requeueMessages(trx, laneless, 'queued')) {
      await this.enqueue(trx, subscription, row);
      requeued.push(row.id);
      sentNow.push(row.id);
    }
    for (const orderId of orderIds) {
      const rows = await requeueMessages(trx, lanes.get(orderId) ?? [], 'held');
      requeued.push(...rows.map((r) => r.id));
      if (rows.length === 0 || (await laneHas(trx, subscription.id, orderId, ['queued']))) continue;
      const next = await releaseNextInLane(trx, subscription.id, orderId);
      if (next === undefined) continue;
      await this.enqueue(trx, subscription, next);
      sentNow.push(next.id);
    }
    return { requeued, sentNow };
  }

  /** The job of the next attempt, grouped by destination (pg-boss limits a group per worker). */
  private async enqueue(trx: Transaction<Database>, subscription: { url: string }, message: MessageToSend, delayMs = 0): Promise<void> {
    await this.deps.queue.send(trx, 'webhook-deliver', { messageRowId: message.id, attempt: message.attempts + 1 }, {
      group: { id: destinationOf(subscription.url) },
      traceParent: message.traceparent,
      ...(delayMs > 0 ? { startAfter: new Date(Date.now() + delayMs) } : {}),
    });
  }

  /** Fails every pending message of a subscription being disabled or deleted, in that transaction. */
  failPending(trx: Transaction<Database>, subscriptionId: number): Promise<number> {
    return failPendingMessages(trx, subscriptionId, SUBSCRIPTION_GONE_ERROR);
  }

  /** One attempt of one message (the job handler). Never throws for a receiver's failure. */
  async deliver(job: JobPayloads['webhook-deliver']): Promise<void> {
    const found = await findMessageWithSubscription(this.deps.db, job.messageRowId);
    if (!found || found.message.status !== 'queued') return; // settled already (a repeated job)
    const { message, subscription } = found;
    // a job whose attempt is already recorded: a repeated job, or one left from before a re-queue
    if (job.attempt !== message.attempts + 1) return;
    trace.getActiveSpan()?.setAttributes({
      'webhook.message.id': message.message_id,
      'webhook.subscription.id': subscription.id,
      'webhook.event.type': message.event_type,
      ...(message.order_id !== null ? { 'order.id': message.order_id } : {}),
    });
    if (!subscription.is_active || subscription.deleted_at !== null) {
      await this.settle(message, subscription, { status: 'failed', attempts: message.attempts, error: SUBSCRIPTION_GONE_ERROR });
      return;
    }
    const result = await sendSignedMessage(
      await this.deps.dispatcher(),
      {
        url: subscription.url,
        secret: subscription.secret,
        previousSecret: overlapEnd(subscription) ? subscription.previous_secret : null,
        messageId: message.message_id,
        body: message.payload,
      },
      { allowPrivate: this.deps.config.webhookAllowPrivateTargets },
    );
    await this.recordAttempt(message, subscription, job.attempt, result);
    webhookDeliveryAttempts.inc({ result: result.success ? 'success' : 'failure' });
  }

  private async recordAttempt(message: WebhookMessageRow, subscription: WebhookSubscriptionRow, attempt: number, result: AttemptResult): Promise<void> {
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
      requestHeaders: result.headers,
      responseBody: result.responseBody,
    };
    if (result.success) {
      await this.settle(message, subscription, { status: 'delivered', attempts: attempt, error: null }, attemptRow, (trx) =>
        resetSubscriptionFailures(trx, message.subscription_id),
      );
      return;
    }
    // the subscriber reads only the generic reason; the cause (resolved addresses, resolver errors) is logged here
    const logged = { subscriptionId: message.subscription_id, messageId: message.message_id, attempt, error: result.error, detail: result.detail ?? undefined };
    const gone = result.statusCode === 410;
    const delay = gone ? undefined : retryDelayMs(this.deps.config.webhookRetrySchedule, attempt - message.retry_base);
    if (delay !== undefined) {
      this.deps.log.info(logged, 'webhook attempt failed');
      await this.deps.db.transaction().execute(async (trx) => {
        await insertDeliveryAttempt(trx, attemptRow);
        if (await noteFailedAttempt(trx, message.id, attempt, result.error)) await this.enqueue(trx, subscription, { ...message, attempts: attempt }, delay);
      });
      return;
    }
    this.deps.log.warn(logged, 'webhook message failed');
    await this.settle(message, subscription, { status: 'failed', attempts: attempt, error: result.error }, attemptRow, async (trx) => {
      const { disabled } = await recordSubscriptionFailure(trx, message.subscription_id, {
        disableAfter: DISABLE_AFTER_FAILED_MESSAGES,
        ...(gone ? { disableReason: 'receiver answered 410 Gone' } : {}),
      });
      if (disabled) {
        const failed = await this.failPending(trx, message.subscription_id);
        this.deps.log.warn({ subscriptionId: message.subscription_id, pendingMessagesFailed: failed }, 'webhook subscription disabled');
        await this.deps.queue.send(trx, 'webhook-disabled-email', { subscriptionId: message.subscription_id });
      }
    });
  }

  /**
   * A message's final state and the release of its lane's next, in one transaction. The attempt is
   * recorded even when the message was settled meanwhile; `alsoInTransaction` runs only when this call
   * settled it. Locks: the lane, the subscription (when changed), then the message.
   */
  private async settle(
    message: WebhookMessageRow,
    subscription: WebhookSubscriptionRow,
    outcome: { status: 'delivered' | 'failed'; attempts: number; error: string | null },
    attempt?: Parameters<typeof insertDeliveryAttempt>[1],
    alsoInTransaction?: (trx: Transaction<Database>) => Promise<void>,
  ): Promise<void> {
    await this.deps.db.transaction().execute(async (trx) => {
      if (message.order_id !== null) await lockMessageLane(trx, message.subscription_id, message.order_id);
      if (alsoInTransaction) await lockSubscription(trx, message.subscription_id);
      if (attempt) await insertDeliveryAttempt(trx, attempt);
      if (!(await settleMessage(trx, message.id, outcome))) return;
      if (alsoInTransaction) await alsoInTransaction(trx);
      if (message.order_id === null) return;
      const next = await releaseNextInLane(trx, message.subscription_id, message.order_id);
      if (next !== undefined) await this.enqueue(trx, subscription, next);
    });
  }
}
