import type { Db } from '../../db/database.ts';
import type { Mailer } from '../../mail/mailer.ts';
import { apiPrefix } from '../../http/api-version.ts';
import { iso } from '../../http/common.schemas.ts';
import { findUserById } from '../users/users.repository.ts';
import { findSubscription } from './subscriptions.repository.ts';

/**
 * The e-mail an owner gets when the service disables their subscription (410 Gone, or a long run of
 * failed messages). Sent by the `webhook-disabled-email` job, queued in the disabling transaction.
 */
export async function sendDisabledNotice(deps: { db: Db; mailer: Mailer }, subscriptionId: number): Promise<void> {
  const subscription = await findSubscription(deps.db, subscriptionId);
  // deleted, or enabled again before the mail went out: the notice would be stale
  if (!subscription || subscription.is_active || subscription.disabled_at === null) return;
  const owner = await findUserById(deps.db, subscription.user_id);
  if (!owner || owner.deleted_at !== null) return;
  const base = `${apiPrefix('v1')}/webhooks/subscriptions/${subscription.id}`;
  const since = iso(subscription.disabled_at);
  await deps.mailer.send({
    to: owner.email,
    subject: `Webhook subscription ${subscription.id} was disabled`,
    text:
      `Hello ${owner.full_name},\n\n` +
      `We disabled your webhook subscription ${subscription.id} to ${subscription.url} at ${since}.\n` +
      `Reason: ${subscription.disabled_reason ?? 'repeated delivery failures'}.\n\n` +
      `Nothing is sent to it while it is disabled. When the receiver works again:\n` +
      `  1. enable it: PATCH ${base} with {"is_active": true}\n` +
      `  2. send again what failed: POST ${base}/recover with {"since": "<when the trouble began>"}\n\n` +
      `The delivery log (GET ${base}/deliveries) shows each attempt and the receiver's answers.\n`,
  });
}
