import type { Updateable } from 'kysely';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import type { UserRow, WebhookDeliveryRow, WebhookSubscriptionRow, WebhookSubscriptionsTable } from '../../db/schema.ts';
import { pageOf, type PageResult } from '../../http/common.schemas.ts';
import { AppError } from '../../http/errors.ts';
import { targetUrlProblem } from './ssrf.ts';
import {
  findSubscription,
  insertSubscription,
  listDeliveries,
  listSubscriptions,
  updateSubscription,
} from './subscriptions.repository.ts';
import type { SubscriptionCreateBody, SubscriptionUpdateBody } from './subscriptions.schemas.ts';
import type { WebhookDeliveryService } from './webhook-delivery.service.ts';
import { newSubscriptionSecret } from './webhook-signing.ts';

const notFound = () => new AppError('NOT_FOUND', 'Subscription not found');

/** Subscriptions are owned by their creator; nobody else (not even an administrator) manages them. */
export class SubscriptionsService {
  private readonly db: Db;
  private readonly config: Config;
  private readonly delivery: WebhookDeliveryService;

  constructor(deps: { db: Db; config: Config; delivery: WebhookDeliveryService }) {
    this.db = deps.db;
    this.config = deps.config;
    this.delivery = deps.delivery;
  }

  private assertTargetUrl(url: string): void {
    const problem = targetUrlProblem(url, this.config.webhookAllowPrivateTargets);
    if (problem) {
      throw new AppError('VALIDATION_ERROR', `Validation failed: body.url: ${problem}`, {
        errors: [{ loc: ['body', 'url'], msg: problem, type: 'url' }],
      });
    }
  }

  async create(owner: UserRow, input: SubscriptionCreateBody): Promise<WebhookSubscriptionRow> {
    this.assertTargetUrl(input.url);
    return insertSubscription(this.db, {
      userId: owner.id,
      url: input.url,
      events: [...input.events],
      description: input.description ?? null,
      secret: newSubscriptionSecret(),
    });
  }

  async list(owner: UserRow, q: { page: number; page_size: number }): Promise<PageResult<WebhookSubscriptionRow>> {
    const { rows, total } = await listSubscriptions(this.db, {
      userId: owner.id,
      limit: q.page_size,
      offset: (q.page - 1) * q.page_size,
    });
    return pageOf(rows, total, q.page, q.page_size);
  }

  async get(actor: UserRow, id: number): Promise<WebhookSubscriptionRow> {
    const subscription = await findSubscription(this.db, id);
    if (!subscription) throw notFound();
    if (subscription.user_id !== actor.id) throw new AppError('FORBIDDEN', 'Not enough permissions to access this subscription');
    return subscription;
  }

  async update(actor: UserRow, id: number, input: SubscriptionUpdateBody): Promise<WebhookSubscriptionRow> {
    await this.get(actor, id);
    if (input.url !== undefined) this.assertTargetUrl(input.url);
    const patch: Updateable<WebhookSubscriptionsTable> = { updated_at: new Date() };
    if (input.url !== undefined) patch.url = input.url;
    if (input.events !== undefined) patch.events = [...input.events];
    if (input.description !== undefined) patch.description = input.description;
    if (input.is_active !== undefined) {
      patch.is_active = input.is_active;
      // re-enabling starts a fresh run; disabling by hand is not the service's doing
      patch.disabled_reason = null;
      if (input.is_active) patch.consecutive_failures = 0;
    }
    const updated = await updateSubscription(this.db, id, patch);
    if (!updated) throw notFound();
    return updated;
  }

  /** Soft delete: the row and its delivery log stay; nothing is sent to it any more. */
  async remove(actor: UserRow, id: number): Promise<void> {
    await this.get(actor, id);
    const now = new Date();
    if (!(await updateSubscription(this.db, id, { deleted_at: now, is_active: false, updated_at: now }))) throw notFound();
  }

  async rotateSecret(actor: UserRow, id: number): Promise<WebhookSubscriptionRow> {
    await this.get(actor, id);
    const updated = await updateSubscription(this.db, id, { secret: newSubscriptionSecret(), updated_at: new Date() });
    if (!updated) throw notFound();
    return updated;
  }

  async deliveries(actor: UserRow, id: number, q: { page: number; page_size: number }): Promise<PageResult<WebhookDeliveryRow>> {
    await this.get(actor, id);
    const { rows, total } = await listDeliveries(this.db, {
      subscriptionId: id,
      limit: q.page_size,
      offset: (q.page - 1) * q.page_size,
    });
    return pageOf(rows, total, q.page, q.page_size);
  }

  async sendTest(actor: UserRow, id: number): Promise<string> {
    const subscription = await this.get(actor, id);
    if (!subscription.is_active) throw new AppError('INVALID_STATE', 'Subscription is disabled; enable it before sending a test event');
    return this.delivery.sendTest(subscription);
  }
}
