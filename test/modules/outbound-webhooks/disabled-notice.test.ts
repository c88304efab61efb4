import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, waitFor, type TestUser } from '../../helpers/app.ts';
import { parseMessage, startSmtpServer, type TestSmtpServer } from '../../mail/smtp-server.ts';
import { DISABLE_AFTER_FAILED_MESSAGES } from '../../../src/modules/outbound-webhooks/delivery.service.ts';
import { BASE, sendTestEvent, startSlowReceiver, subscribe, type SlowReceiver } from './outbound-webhooks.helpers.ts';

interface SubscriptionRead {
  is_active: boolean;
  disabled_reason: string | null;
  disabled_at: string | null;
}

/**
 * When the service disables a subscription (410 Gone, or a long run of failed messages), its owner
 * gets an e-mail through the mail job, and the subscription read says why and when.
 */
describe('outgoing webhooks: the disabled notice', () => {
  let app: FastifyInstance;
  let smtp: TestSmtpServer;
  const receivers: SlowReceiver[] = [];

  async function receiver(status: number): Promise<SlowReceiver> {
    const r = await startSlowReceiver();
    r.respond = () => ({ status });
    receivers.push(r);
    return r;
  }
  const read = async (who: TestUser, id: number) => (await api(app, who, { method: 'GET', url: `${BASE}/${id}` })).json<SubscriptionRead>();
  const mailsTo = (email: string) => smtp.messages.filter((m) => m.to.includes(email)).map((m) => parseMessage(m.raw));

  before(async () => {
    smtp = await startSmtpServer(undefined);
    // no retries: every failed attempt fails its message for good
    app = await buildTestApp(undefined, { smtpUrl: smtp.url, webhookRetrySchedule: [] });
  });
  after(async () => {
    await app.close();
    for (const r of receivers) await r.close();
    await smtp.close();
  });

  it('410 Gone: the owner is e-mailed, the read shows disabled_reason and disabled_at', async () => {
    const owner = await createUser(app, { fullName: 'Gone Receiver Owner' });
    const r = await receiver(410);
    const sub = await subscribe(app, owner, r.url);
    const startedAt = Date.now();
    await sendTestEvent(app, owner, sub.id);
    const [mail] = await waitFor(async () => {
      const m = mailsTo(owner.email);
      return m.length > 0 ? m : undefined;
    });
    const state = await read(owner, sub.id);
    assert.equal(state.is_active, false);
    assert.equal(state.disabled_reason, 'receiver answered 410 Gone');
    const at = Date.parse(state.disabled_at ?? '');
    assert.ok(at >= startedAt - 1000 && at <= Date.now(), `disabled_at ${state.disabled_at}`);
    assert.match(mail.headers.subject, new RegExp(`Webhook subscription ${sub.id} was disabled`));
    assert.match(mail.body, /Hello Gone Receiver Owner/);
    assert.ok(mail.body.includes(r.url), mail.body);
    assert.match(mail.body, /Reason: receiver answered 410 Gone/);
    assert.ok(mail.body.includes(`POST /api/v1/webhooks/subscriptions/${sub.id}/recover`), mail.body);
    assert.ok(mail.body.includes(state.disabled_at ?? '-'), 'the mail says when');
    const jobs = await app.ctx.queue.boss.findJobs<{ subscriptionId: number }>('webhook-disabled-email', { data: { subscriptionId: sub.id } });
    assert.equal(jobs.length, 1, 'one notice per disabling');
  });

  it('a long run of failed messages: the owner is e-mailed once, with that reason', async () => {
    const owner = await createUser(app);
    const r = await receiver(500);
    const sub = await subscribe(app, owner, r.url);
    await app.ctx.db
      .updateTable('webhook_subscriptions')
      .set({ consecutive_failures: DISABLE_AFTER_FAILED_MESSAGES - 2 })
      .where('id', '=', sub.id)
      .execute();
    await sendTestEvent(app, owner, sub.id);
    await sendTestEvent(app, owner, sub.id);
    const [mail] = await waitFor(async () => {
      const m = mailsTo(owner.email);
      return m.length > 0 ? m : undefined;
    });
    const state = await read(owner, sub.id);
    assert.equal(state.disabled_reason, `disabled after ${DISABLE_AFTER_FAILED_MESSAGES} consecutive failed messages`);
    assert.ok(state.disabled_at);
    assert.match(mail.body, new RegExp(`Reason: disabled after ${DISABLE_AFTER_FAILED_MESSAGES} consecutive failed messages`));

    // re-enabling clears both; nothing more is mailed
    const enabled = await api(app, owner, { method: 'PATCH', url: `${BASE}/${sub.id}`, payload: { is_active: true } });
    assert.deepEqual([enabled.json<SubscriptionRead>().disabled_reason, enabled.json<SubscriptionRead>().disabled_at], [null, null]);
    assert.equal(mailsTo(owner.email).length, 1);
  });

  it('disabling by hand sets disabled_at without a reason and sends no e-mail', async () => {
    const owner = await createUser(app);
    const r = await receiver(200);
    const sub = await subscribe(app, owner, r.url);
    const res = await api(app, owner, { method: 'PATCH', url: `${BASE}/${sub.id}`, payload: { is_active: false } });
    assert.equal(res.statusCode, 200);
    const state = res.json<SubscriptionRead>();
    assert.equal(state.is_active, false);
    assert.equal(state.disabled_reason, null);
    assert.ok(state.disabled_at);
    const jobs = await app.ctx.queue.boss.findJobs('webhook-disabled-email', { data: { subscriptionId: sub.id } });
    assert.equal(jobs.length, 0);
    assert.equal(mailsTo(owner.email).length, 0);
  });
});
