import crypto from 'node:crypto';
import type { Updateable } from 'kysely';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import type { UserRow } from '../../db/schema.ts';
import type { WebhookDeliveryRow, WebhookMessageRow, WebhookSubscriptionRow, WebhookSubscriptionsTable } from './outbound-webhooks.tables.ts';
import { WEBHOOK_EVENT_KINDS } from '../../events/order-events.ts';
import type { ApiVersion } from '../../http/api-version.ts';
import { cappedPageOf, pageOf, type CappedPageResult, type PageResult } from '../../http/common.schemas.ts';
import { AppError, invalidQuery } from '../../http/errors.ts';
import { BUCKET_MS, EARLIEST_MS, MAX_BUCKETS, askedRange } from '../../http/validation.ts';
import { activeTraceparent } from '../../jobs/job-tracing.ts';
import type { WebhookDeliveryService } from './delivery.service.ts';
import { testMessage, WEBHOOK_TEST_EVENT, type WebhookEventType } from './message-rendering.ts';
import { countAttemptsPerBucket, failedMessagesSince, failPendingMessages, findMessage, insertMessage, listDeliveries, listMessages, type DeliveryListRow, type PageParams } from './messages.repository.ts';
import { targetUrlProblem } from './ssrf.ts';
import {
  findSubscription,
  insertSubscription,
  listSubscriptions,
  lockSubscriptionUrls,
  rotateSubscriptionSecret,
  updateSubscription,
} from './subscriptions.repository.ts';
import {
  DEFAULT_SECRET_OVERLAP_SECONDS,
  type DeliveryListQuery,
  type MessageListQuery,
  type StatsQuery,
  type SubscriptionCreateBody,
  type SubscriptionUpdateBody,
} from './outbound-webhooks.schemas.ts';
import { findMessageAttempts } from './trace.repository.ts';

const notFound = () => new AppError('NOT_FOUND', 'Subscription not found');
const messageNotFound = () => new AppError('NOT_FOUND', 'Message not found');
/** Standard Webhooks secrets: `whsec_` + base64 of 24 random bytes (192 bits). */
const newSubscriptionSecret = () => `whsec_${crypto.randomBytes(24).toString('base64')}`;

export type BucketCounts = Awaited<ReturnType<typeof countAttemptsPerBucket>>[number];
export type MessageWithAttempts = { message: WebhookMessageRow; attempts: WebhookDeliveryRow[] };

/** The 422 of a body field that passed its schema but not a rule of the service. */
const invalidBody = (loc: (string | number)[], msg: string, type: string) =>
  new AppError('VALIDATION_ERROR', `Validation failed: ${loc.join('.')}: ${msg}`, { errors: [{ loc, msg, type }] });

function assertEnabled(subscription: WebhookSubscriptionRow, action: string): void {
  if (!subscription.is_active) throw new AppError('INVALID_STATE', `Subscription is disabled; enable it before ${action}`);
}

/** The form two subscription URLs are compared in: WHATWG-normalised, without fragment, empty query or trailing dot. */
function subscriptionUrlKey(raw: string): string {
  const url = URL.parse(raw);
  if (!url) return raw;
  url.hash = '';
  if (url.search === '?') url.search = '';
  if (url.hostname.endsWith('.')) url.hostname = url.hostname.slice(0, -1);
  return url.href;
}

/** Subscriptions, their delivery log and messages; each is its creator's alone (not even an administrator manages it). */
export class SubscriptionsService {
  private readonly deps: { db: Db; config: Config; delivery: WebhookDeliveryService };

  constructor(deps: SubscriptionsService['deps']) {
    this.deps = deps;
  }

  private assertTargetUrl(url: string): void {
    const problem = targetUrlProblem(url, this.deps.config.webhookAllowPrivateTargets);
    if (problem) throw invalidBody(['body', 'url'], problem, 'url');
  }

  private static assertNoDuplicate(live: { id: number; url: string }[], url: string, exceptId?: number): void {
    const key = subscriptionUrlKey(url);
    const same = live.find((s) => s.id !== exceptId && subscriptionUrlKey(s.url) === key);
    if (same) throw new AppError('SUBSCRIPTION_URL_EXISTS', `You already have a subscription to this URL (subscription ${same.id})`);
  }

  /** A subscription can subscribe only to (and be sent samples of) the kinds its own version has (also when changed through v2). */
  private static assertKindsOf(version: ApiVersion, events: readonly string[], field: 'events' | 'event_type' = 'events'): void {
    const known = WEBHOOK_EVENT_KINDS[version] as readonly string[];
    const index = events.findIndex((e) => !known.includes(e));
    if (index === -1) return;
    const msg = `a ${version} subscription receives only ${known.join(', ')}; create a v2 subscription for ${events[index]}`;
    throw invalidBody(field === 'events' ? ['body', 'events', index] : ['body', field], msg, 'enum');
  }

  async create(owner: UserRow, input: SubscriptionCreateBody, apiVersion: ApiVersion): Promise<WebhookSubscriptionRow> {
    this.assertTargetUrl(input.url);
    SubscriptionsService.assertKindsOf(apiVersion, input.events);
    return this.deps.db.transaction().execute(async (trx) => {
      const live = await lockSubscriptionUrls(trx, owner.id);
      const max = this.deps.config.webhookMaxSubscriptionsPerUser;
      if (live.length >= max) {
        throw new AppError('SUBSCRIPTION_LIMIT_REACHED', `A user may have at most ${max} webhook subscriptions; delete one you no longer use`);
      }
      SubscriptionsService.assertNoDuplicate(live, input.url);
      return insertSubscription(trx, {
        user_id: owner.id,
        url: input.url,
        events: [...input.events],
        description: input.description ?? null,
        secret: newSubscriptionSecret(),
        api_version: apiVersion,
      });
    });
  }

  async list(owner: UserRow, q: PageParams): Promise<PageResult<WebhookSubscriptionRow>> {
    const { rows, total } = await listSubscriptions(this.deps.db, owner.id, q);
    return pageOf(rows, total, q.page, q.page_size);
  }

  async get(actor: UserRow, id: number): Promise<WebhookSubscriptionRow> {
    const subscription = await findSubscription(this.deps.db, id);
    if (!subscription) throw notFound();
    if (subscription.user_id !== actor.id) throw new AppError('FORBIDDEN', 'Not enough permissions to access this subscription');
    return subscription;
  }

  async update(actor: UserRow, id: number, input: SubscriptionUpdateBody): Promise<WebhookSubscriptionRow> {
    const current = await this.get(actor, id);
    if (input.events !== undefined) SubscriptionsService.assertKindsOf(current.api_version, input.events);
    if (input.url !== undefined) this.assertTargetUrl(input.url);
    const now = new Date();
    const patch: Updateable<WebhookSubscriptionsTable> = { updated_at: now };
    if (input.url !== undefined) patch.url = input.url;
    if (input.events !== undefined) patch.events = [...input.events];
    if (input.description !== undefined) patch.description = input.description;
    if (input.is_active !== undefined) {
      patch.is_active = input.is_active;
      // re-enabling starts a fresh run; disabling by hand is not the service's doing, so it has no reason
      patch.disabled_reason = null;
      patch.disabled_at = input.is_active ? null : now;
      if (input.is_active) patch.consecutive_failures = 0;
    }
    const updated = await this.deps.db.transaction().execute(async (trx) => {
      if (input.url !== undefined) SubscriptionsService.assertNoDuplicate(await lockSubscriptionUrls(trx, actor.id), input.url, id);
      const row = await updateSubscription(trx, id, patch);
      // what is still pending fails now, not at its next attempt
      if (row && input.is_active === false) await failPendingMessages(trx, id);
      return row;
    });
    if (!updated) throw notFound();
    return updated;
  }

  /** Soft delete: the row and its log stay; its pending messages fail in the same transaction. */
  async remove(actor: UserRow, id: number): Promise<void> {
    await this.get(actor, id);
    const now = new Date();
    const removed = await this.deps.db.transaction().execute(async (trx) => {
      const row = await updateSubscription(trx, id, { deleted_at: now, is_active: false, updated_at: now });
      if (row) await failPendingMessages(trx, id);
      return row;
    });
    if (!removed) throw notFound();
  }

  /** A new secret; the replaced one keeps signing beside it for `overlapSeconds` (rotating again ends that). */
  async rotateSecret(actor: UserRow, id: number, overlapSeconds = DEFAULT_SECRET_OVERLAP_SECONDS): Promise<WebhookSubscriptionRow> {
    await this.get(actor, id);
    const previousUntil = overlapSeconds > 0 ? new Date(Date.now() + overlapSeconds * 1000) : null;
    const updated = await rotateSubscriptionSecret(this.deps.db, id, newSubscriptionSecret(), previousUntil);
    if (!updated) throw notFound();
    return updated;
  }

  /** A sample of `type` (default `webhook.test`) in the subscription's rendering, outside any order's lane; the type must be one its version has. */
  async sendTest(actor: UserRow, id: number, type: WebhookEventType = WEBHOOK_TEST_EVENT): Promise<string> {
    const subscription = await this.get(actor, id);
    if (type !== WEBHOOK_TEST_EVENT) SubscriptionsService.assertKindsOf(subscription.api_version, [type], 'event_type');
    assertEnabled(subscription, 'sending a test event');
    const { messageId, payload } = testMessage(subscription, type);
    await this.deps.db.transaction().execute(async (trx) => {
      const message = await insertMessage(trx, {
        message_id: messageId,
        subscription_id: subscription.id,
        event_id: null,
        order_id: null,
        event_type: type,
        payload,
        status: 'queued',
        traceparent: activeTraceparent(),
      });
      await this.deps.delivery.enqueue(trx, subscription, message);
    });
    return messageId;
  }

  /** Attempts, newest first; `status` filters on the state of each attempt's message now. */
  async deliveries(actor: UserRow, id: number, q: DeliveryListQuery): Promise<PageResult<DeliveryListRow>> {
    await this.get(actor, id);
    const { rows, total } = await listDeliveries(this.deps.db, id, q);
    return pageOf(rows, total, q.page, q.page_size);
  }

  /** Messages, newest first, each with its attempts (oldest first). */
  async messages(actor: UserRow, id: number, q: MessageListQuery): Promise<CappedPageResult<MessageWithAttempts>> {
    await this.get(actor, id);
    const { rows, count } = await listMessages(this.deps.db, id, q);
    const attempts = Map.groupBy(await findMessageAttempts(this.deps.db, rows.map((m) => m.message_id), id), (a) => a.message_id);
    const items = rows.map((message) => ({ message, attempts: attempts.get(message.message_id) ?? [] }));
    return cappedPageOf(items, count, q.page, q.page_size);
  }

  /** Attempts per UTC hour or day by outcome, every bucket of the range present (zeros included), `from` aligned down to its bucket. */
  async stats(actor: UserRow, id: number, q: StatsQuery): Promise<{ bucket: 'hour' | 'day'; from: Date; to: Date; buckets: BucketCounts[] }> {
    await this.get(actor, id);
    const bucket = q.bucket ?? 'hour';
    const size = BUCKET_MS[bucket];
    const asked = askedRange(q, bucket);
    const to = new Date(asked.to);
    const from = new Date(Math.floor(asked.from / size) * size);
    const problem =
      from >= to ? '`from` must be before `to`'
      : from.getTime() < EARLIEST_MS ? 'is before the year 1'
      : (to.getTime() - from.getTime()) / size > MAX_BUCKETS ? `at most ${MAX_BUCKETS} buckets`
      : '';
    if (problem) throw invalidQuery('from', problem);
    const counted = new Map((await countAttemptsPerBucket(this.deps.db, { subscriptionId: id, bucket, from, to })).map((b) => [b.start.getTime(), b]));
    const buckets: BucketCounts[] = [];
    for (let t = from.getTime(); t < to.getTime(); t += size) buckets.push(counted.get(t) ?? { start: new Date(t), succeeded: 0, failed: 0 });
    return { bucket, from, to, buckets };
  }

  async message(actor: UserRow, id: number, messageId: string): Promise<MessageWithAttempts> {
    await this.get(actor, id);
    const message = await findMessage(this.deps.db, id, messageId);
    if (!message) throw messageNotFound();
    return { message, attempts: await findMessageAttempts(this.deps.db, [messageId], id) };
  }

  /** Sends a settled message again with the same `webhook-id`, back into its order's lane. */
  async resend(actor: UserRow, id: number, messageId: string): Promise<{ waiting: boolean }> {
    const subscription = await this.get(actor, id);
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
    const subscription = await this.get(actor, id);
    assertEnabled(subscription, 'recovering messages');
    return this.deps.db.transaction().execute(async (trx) => {
      const { requeued } = await this.deps.delivery.requeue(trx, subscription, await failedMessagesSince(trx, id, since));
      return requeued.length;
    });
  }
}
