import { trace } from '@opentelemetry/api';
import { sql, type Transaction } from 'kysely';
import type { Dispatcher } from 'undici';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import type { WebhookMessageRow, WebhookSubscriptionRow } from './outbound-webhooks.tables.ts';
import { ORDER_EVENT_TYPES, type OrderEventOf } from '../../events/order-events.ts';
import { apiPrefix } from '../../http/api-version.ts';
import { iso } from '../../http/common.schemas.ts';
import { AppError } from '../../http/errors.ts';
import { activeTraceparent } from '../../jobs/job-tracing.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { JobPayloads } from '../../jobs/registry.ts';
import type { Mailer } from '../../mail/mailer.ts';
import { findUserById } from '../users/users.repository.ts';
import {
  findMessageWithSubscription,
  insertDeliveryAttempt,
  insertMessage,
  laneHas,
  lockMessageLane,
  failPendingMessages,
  releaseNextInLane,
  requeueMessages,
  updateQueuedMessage,
  SUBSCRIPTION_GONE_ERROR,
  type MessageToSend,
} from './messages.repository.ts';
import { kindsOf, messageIdFor, orderEventEnvelope } from './message-rendering.ts';
import { destinationOf, overlapEnd, sendSignedMessage, type AttemptResult } from './sender.ts';
import { findSubscription, lockActiveSubscriptions, lockSubscription, matchingSubscriptions, recordSubscriptionFailure, resetSubscriptionFailures } from './subscriptions.repository.ts';
import { webhookDeliveryAttempts } from './outbound-webhooks.metrics.ts';

/** A subscription whose last N messages all failed (after every retry) is disabled. */
export const DISABLE_AFTER_FAILED_MESSAGES = 20;
const DELIVERY_JITTER = 0.2;

/** The delay before retry number `retry` (1 = the first), with ±10 % jitter. */
function retryDelayMs(schedule: readonly number[], retry: number): number | undefined {
  const base = schedule[retry - 1];
  if (base === undefined) return undefined;
  return Math.round(base * 1000 * (1 - DELIVERY_JITTER / 2 + Math.random() * DELIVERY_JITTER));
}

/**
 * Each attempt is a job sent with its delay (pg-boss's retries cover only a crash around one). One order's messages to
 * one subscription form a lane: at most one is `queued`, the later ones wait `held` and are released oldest first, resent ones included.
 */
export class WebhookDeliveryService {
  private readonly deps: { db: Db; queue: JobQueue; config: Config; dispatcher: () => Promise<Dispatcher>; log: FastifyBaseLogger; mailer: Mailer };

  constructor(deps: WebhookDeliveryService['deps']) {
    this.deps = deps;
  }

  /** A message per matching subscription and kind it wants, in its version's rendering; locks the lanes first, in (subscription, order) order, as a resend does. */
  async fanOut(trx: Transaction<Database>, changes: readonly OrderEventOf[]): Promise<void> {
    const events = changes.map((c) => c.event).filter((e) => (ORDER_EVENT_TYPES as readonly string[]).includes(e.type));
    if (events.length === 0) return;
    const owners = [...new Set(events.map((e) => e.user_id))];
    const subscriptions = await matchingSubscriptions(trx, sql`SELECT unnest(${owners}::integer[])`).execute();
    const sends = events.flatMap((event) =>
      subscriptions
        .filter((subscription) => subscription.all_orders || subscription.user_id === event.user_id)
        .map((subscription) => ({ event, subscription, kinds: kindsOf(event).filter((k) => subscription.events.includes(k)) }))
        .filter((send) => send.kinds.length > 0),
    );
    const lanes = [...new Map(sends.map((s) => [`${s.subscription.id} ${s.event.order_id}`, [s.subscription.id, s.event.order_id]])).values()];
    for (const [subscriptionId, orderId] of lanes.sort(([s1, o1], [s2, o2]) => s1 - s2 || o1 - o2)) await lockMessageLane(trx, subscriptionId, orderId);
    // then the subscriptions (the lock order): one disabled or deleted meanwhile gets nothing, and none is until these messages commit
    const active = await lockActiveSubscriptions(trx, [...new Set(sends.map((s) => s.subscription.id))]);
    // one rendering per event, kind and API version, whatever the number of subscriptions
    const payloads = new Map<string, string>();
    // each message continues its event's trace (the change that wrote it), not the publishing job's
    const current = activeTraceparent();
    for (const { event, subscription, kinds } of sends) {
      if (!active.has(subscription.id)) continue;
      for (const kind of kinds) {
        const key = `${event.id} ${kind} ${subscription.api_version}`;
        const payload = payloads.get(key) ?? JSON.stringify(orderEventEnvelope(event, kind, subscription.api_version));
        payloads.set(key, payload);
        const busy = await laneHas(trx, subscription.id, event.order_id, ['held', 'queued']);
        const message = await insertMessage(trx, {
          message_id: messageIdFor(event.id, subscription.id, kind, event.type),
          subscription_id: subscription.id,
          event_id: event.id,
          order_id: event.order_id,
          event_type: kind,
          payload,
          status: busy ? 'held' : 'queued',
          traceparent: event.traceparent ?? current,
        });
        if (!busy) await this.enqueue(trx, subscription, message);
      }
    }
  }

  /**
   * Settled messages back into their lanes with a fresh retry schedule: the ids re-queued, and those sent at once.
   * INVALID_STATE when it is disabled or deleted by the time its row is share-locked, after the lanes (the lock order of docs/architecture.md).
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
    const laneless = await requeueMessages(trx, messages.filter((m) => m.order_id === null).map((m) => m.id), 'queued');
    for (const row of laneless) await this.enqueue(trx, subscription, row);
    const requeued = laneless.map((r) => r.id);
    const sentNow = [...requeued];
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
  async enqueue(trx: Transaction<Database>, subscription: { url: string }, message: MessageToSend, delayMs = 0): Promise<void> {
    await this.deps.queue.send(trx, 'webhook-deliver', { messageRowId: message.id, attempt: message.attempts + 1 }, {
      group: { id: destinationOf(subscription.url) },
      traceParent: message.traceparent,
      ...(delayMs > 0 ? { startAfter: new Date(Date.now() + delayMs) } : {}),
    });
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
      await this.settle(message, subscription, { status: 'failed', attempts: message.attempts, last_error: SUBSCRIPTION_GONE_ERROR });
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
      subscription_id: message.subscription_id,
      event_id: message.event_id,
      event_type: message.event_type,
      message_id: message.message_id,
      attempt,
      status_code: result.statusCode,
      duration_ms: result.durationMs,
      success: result.success,
      error: result.error,
      request_headers: JSON.stringify(result.headers),
      response_body: result.responseBody,
    };
    if (result.success) {
      await this.settle(message, subscription, { status: 'delivered', attempts: attempt, last_error: null }, attemptRow, (trx) =>
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
        if (await updateQueuedMessage(trx, message.id, { attempts: attempt, last_error: result.error })) await this.enqueue(trx, subscription, { ...message, attempts: attempt }, delay);
      });
      return;
    }
    this.deps.log.warn(logged, 'webhook message failed');
    await this.settle(message, subscription, { status: 'failed', attempts: attempt, last_error: result.error }, attemptRow, async (trx) => {
      if (await recordSubscriptionFailure(trx, message.subscription_id, DISABLE_AFTER_FAILED_MESSAGES, gone ? 'receiver answered 410 Gone' : undefined)) {
        const failed = await failPendingMessages(trx, message.subscription_id);
        this.deps.log.warn({ subscriptionId: message.subscription_id, pendingMessagesFailed: failed }, 'webhook subscription disabled');
        await this.deps.queue.send(trx, 'webhook-disabled-email', { subscriptionId: message.subscription_id });
      }
    });
  }

  /**
   * A message's final state and the release of its lane's next. The attempt is recorded even when the message was settled
   * meanwhile; `alsoInTransaction` runs only when this call settled it. Locks: the lane, the subscription (if changed), the message.
   */
  private async settle(
    message: WebhookMessageRow,
    subscription: WebhookSubscriptionRow,
    outcome: { status: 'delivered' | 'failed'; attempts: number; last_error: string | null },
    attempt?: Parameters<typeof insertDeliveryAttempt>[1],
    alsoInTransaction?: (trx: Transaction<Database>) => Promise<void>,
  ): Promise<void> {
    await this.deps.db.transaction().execute(async (trx) => {
      if (message.order_id !== null) await lockMessageLane(trx, message.subscription_id, message.order_id);
      if (alsoInTransaction) await lockSubscription(trx, message.subscription_id);
      if (attempt) await insertDeliveryAttempt(trx, attempt);
      if (!(await updateQueuedMessage(trx, message.id, { ...outcome, settled_at: new Date() }))) return;
      if (alsoInTransaction) await alsoInTransaction(trx);
      if (message.order_id === null) return;
      const next = await releaseNextInLane(trx, message.subscription_id, message.order_id);
      if (next !== undefined) await this.enqueue(trx, subscription, next);
    });
  }

  /** The e-mail to the owner of a subscription the service disabled (the `webhook-disabled-email` job, queued by the disabling). */
  async sendDisabledNotice(subscriptionId: number): Promise<void> {
    const subscription = await findSubscription(this.deps.db, subscriptionId);
    // deleted, or enabled again before the mail went out: the notice would be stale
    if (!subscription || subscription.is_active || subscription.disabled_at === null) return;
    const owner = await findUserById(this.deps.db, subscription.user_id);
    if (!owner || owner.deleted_at !== null) return;
    const base = `${apiPrefix('v1')}/webhooks/subscriptions/${subscription.id}`;
    await this.deps.mailer.send({
      to: owner.email,
      subject: `Webhook subscription ${subscription.id} was disabled`,
      text:
        `Hello ${owner.full_name},\n\n` +
        `We disabled your webhook subscription ${subscription.id} to ${subscription.url} at ${iso(subscription.disabled_at)}.\n` +
        `Reason: ${subscription.disabled_reason ?? 'repeated delivery failures'}.\n\n` +
        `Nothing is sent to it while it is disabled. When the receiver works again:\n` +
        `  1. enable it: PATCH ${base} with {"is_active": true}\n` +
        `  2. send again what failed: POST ${base}/recover with {"since": "<when the trouble began>"}\n\n` +
        `The delivery log (GET ${base}/deliveries) shows each attempt and the receiver's answers.\n`,
    });
  }
}
