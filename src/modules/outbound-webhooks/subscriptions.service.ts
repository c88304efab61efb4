import type { Updateable } from 'kysely';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import type { UserRow, WebhookSubscriptionRow, WebhookSubscriptionsTable } from '../../db/schema.ts';
import { WEBHOOK_EVENT_KINDS } from '../../events/order-events.ts';
import type { ApiVersion } from '../../http/api-version.ts';
import { pageOf, type PageResult } from '../../http/common.schemas.ts';
import { AppError } from '../../http/errors.ts';
import type { WebhookDeliveryService } from './delivery.service.ts';
import { WEBHOOK_TEST_EVENT, type WebhookEventType } from './message-rendering.ts';
import { newSubscriptionSecret } from './signing.ts';
import { targetUrlProblem } from './ssrf.ts';
import {
  findSubscription,
  insertSubscription,
  listSubscriptions,
  liveSubscriptionUrls,
  lockUserSubscriptions,
  rotateSubscriptionSecret,
  updateSubscription,
} from './subscriptions.repository.ts';
import { DEFAULT_SECRET_OVERLAP_SECONDS, type SubscriptionCreateBody, type SubscriptionUpdateBody } from './outbound-webhooks.schemas.ts';

const notFound = () => new AppError('NOT_FOUND', 'Subscription not found');

/** The form two subscription URLs are compared in: WHATWG-normalised, without fragment, empty query or trailing dot. */
function subscriptionUrlKey(raw: string): string {
  try {
    const url = new URL(raw);
    url.hash = '';
    if (url.search === '?') url.search = '';
    if (url.hostname.endsWith('.')) url.hostname = url.hostname.slice(0, -1);
    return url.href;
  } catch {
    return raw;
  }
}

/** Subscriptions are owned by their creator; nobody else (not even an administrator) manages them. */
export class SubscriptionsService {
  private readonly deps: { db: Db; config: Config; delivery: WebhookDeliveryService };

  constructor(deps: SubscriptionsService['deps']) {
    this.deps = deps;
  }

  private assertTargetUrl(url: string): void {
    const problem = targetUrlProblem(url, this.deps.config.webhookAllowPrivateTargets);
    if (problem) {
      throw new AppError('VALIDATION_ERROR', `Validation failed: body.url: ${problem}`, {
        errors: [{ loc: ['body', 'url'], msg: problem, type: 'url' }],
      });
    }
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
    const loc = field === 'events' ? ['body', 'events', index] : ['body', field];
    throw new AppError('VALIDATION_ERROR', `Validation failed: ${loc.join('.')}: ${msg}`, { errors: [{ loc, msg, type: 'enum' }] });
  }

  async create(owner: UserRow, input: SubscriptionCreateBody, apiVersion: ApiVersion): Promise<WebhookSubscriptionRow> {
    this.assertTargetUrl(input.url);
    SubscriptionsService.assertKindsOf(apiVersion, input.events);
    return this.deps.db.transaction().execute(async (trx) => {
      await lockUserSubscriptions(trx, owner.id);
      const live = await liveSubscriptionUrls(trx, owner.id);
      const max = this.deps.config.webhookMaxSubscriptionsPerUser;
      if (live.length >= max) {
        throw new AppError('SUBSCRIPTION_LIMIT_REACHED', `A user may have at most ${max} webhook subscriptions; delete one you no longer use`);
      }
      SubscriptionsService.assertNoDuplicate(live, input.url);
      return insertSubscription(trx, {
        userId: owner.id,
        url: input.url,
        events: [...input.events],
        description: input.description ?? null,
        secret: newSubscriptionSecret(),
        apiVersion,
      });
    });
  }

  async list(owner: UserRow, q: { page: number; page_size: number }): Promise<PageResult<WebhookSubscriptionRow>> {
    const { rows, total } = await listSubscriptions(this.deps.db, {
      userId: owner.id,
      limit: q.page_size,
      offset: (q.page - 1) * q.page_size,
    });
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
      if (input.url !== undefined) {
        await lockUserSubscriptions(trx, actor.id);
        SubscriptionsService.assertNoDuplicate(await liveSubscriptionUrls(trx, actor.id), input.url, id);
      }
      const row = await updateSubscription(trx, id, patch);
      // what is still pending fails now, not at its next attempt
      if (row && input.is_active === false) await this.deps.delivery.failPending(trx, id);
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
      if (row) await this.deps.delivery.failPending(trx, id);
      return row;
    });
    if (!removed) throw notFound();
  }

  /** A new secret; the replaced one keeps signing beside it for `overlapSeconds` (rotating again ends that). */
  async rotateSecret(actor: UserRow, id: number, overlapSeconds = DEFAULT_SECRET_OVERLAP_SECONDS): Promise<WebhookSubscriptionRow> {
    await this.get(actor, id);
    const updated = await rotateSubscriptionSecret(this.deps.db, id, {
      secret: newSubscriptionSecret(),
      previousUntil: overlapSeconds > 0 ? new Date(Date.now() + overlapSeconds * 1000) : null,
    });
    if (!updated) throw notFound();
    return updated;
  }

  /** A sample of `type` (default `webhook.test`) in the subscription's rendering; the type must be one its version has. */
  async sendTest(actor: UserRow, id: number, type: WebhookEventType = WEBHOOK_TEST_EVENT): Promise<string> {
    const subscription = await this.get(actor, id);
    if (type !== WEBHOOK_TEST_EVENT) SubscriptionsService.assertKindsOf(subscription.api_version, [type], 'event_type');
    if (!subscription.is_active) throw new AppError('INVALID_STATE', 'Subscription is disabled; enable it before sending a test event');
    return this.deps.delivery.sendTest(subscription, type);
  }
}
