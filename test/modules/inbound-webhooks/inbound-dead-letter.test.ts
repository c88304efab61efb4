import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { JobPayloads } from '../../../src/jobs/registry.ts';
import type { InboundProcessHooks } from '../../../src/modules/inbound-webhooks/inbound-webhooks.service.ts';
import { clearHooks } from '../../helpers/orders.ts';
import { buildTestApp, waitFor } from '../../helpers/app.ts';
import { fixturePayload, seedProduct, sendInbound, SHOPIFY_SECRET } from '../../helpers/webhooks.ts';

/**
 * DESIGN §6: processing records the stored event `processed` or `failed`, with the error — also
 * when pg-boss gives up on its job without the handler recording it (the last attempt expired or
 * lost its worker). The job's dead-letter copy records it.
 */
describe('inbound events whose job pg-boss gives up on', () => {
  const hooks: InboundProcessHooks = {};
  let app: FastifyInstance;
  let externalId = 9100000000000;

  before(async () => {
    app = await buildTestApp(undefined, { shopifyWebhookSecret: SHOPIFY_SECRET }, { hooks: { inboundProcessing: hooks } });
    await seedProduct(app, 'MUG-CERAMIC-350', { price: '12.50', stock: 1000 });
    await seedProduct(app, 'TEA-EARLGREY-100', { price: '32.50', stock: 1000 });
  });
  after(() => app.close());

  const eventOf = (webhookId: string) =>
    app.ctx.db.selectFrom('inbound_webhooks').selectAll().where('webhook_id', '=', webhookId).executeTakeFirstOrThrow();

  const settled = (webhookId: string) =>
    waitFor(async () => {
      const row = await eventOf(webhookId);
      return row.status !== 'received' ? row : undefined;
    }, 30000);

  const ordersFor = (id: number) =>
    app.ctx.db.selectFrom('orders').select('id').where('source', '=', 'shopify').where('external_id', '=', String(id)).execute();

  const deadLetterJobs = (inboundWebhookId: number) =>
    app.ctx.queue.boss.findJobs<JobPayloads['webhook-inbound-process']>('webhook-inbound-process-dead-letter', { data: { inboundWebhookId } });

  /** See test/orders/dead-letter.test.ts: the queue's settings change, and pg-boss's lookup is made here. */
  async function setInboundQueue(options: { expireInSeconds: number }) {
    await app.ctx.queue.boss.updateQueue('webhook-inbound-process', options);
    await app.ctx.queue.boss.findJobs('webhook-inbound-process', { id: '00000000-0000-0000-0000-000000000000' });
  }

  it('the last attempt expires while its handler hangs: the event is failed with the error, and no order appears later', { timeout: 60000 }, async () => {
    await setInboundQueue({ expireInSeconds: 1 });
    let release: () => void = () => {};
    const hung = new Promise<void>((resolve) => (release = resolve));
    const attempts: boolean[] = [];
    hooks.beforeProcess = async (_id, lastAttempt) => {
      attempts.push(lastAttempt);
      if (!lastAttempt) throw new Error('injected transient fault');
      await hung;
    };
    try {
      const id = ++externalId;
      const res = await sendInbound(app, JSON.stringify({ ...fixturePayload(), id }), { webhookId: 'expired-last-attempt' });
      assert.equal(res.statusCode, 200, res.body);
      const row = await settled('expired-last-attempt');
      assert.equal(row.status, 'failed');
      // failed by the worker's own deadline, or by a supervision pass that got there first
      assert.match(row.error ?? '', /^processing error: (handler execution exceeded 1s|job timed out)$/);
      assert.equal(row.order_id, null);
      assert.ok(row.processed_at);
      assert.deepEqual(attempts, [false, false, true]);
      assert.equal((await deadLetterJobs(row.id)).length, 1);

      // the abandoned attempt wakes up late: the event is settled, so it creates nothing
      const ended = new Promise<void>((resolve) => (hooks.afterProcess = (inboundId) => inboundId === row.id && resolve()));
      release();
      await ended;
      assert.equal((await eventOf('expired-last-attempt')).status, 'failed');
      assert.equal((await ordersFor(id)).length, 0);
    } finally {
      release();
      clearHooks(hooks);
      await setInboundQueue({ expireInSeconds: 300 });
    }
  });

  it('a dead-letter job for a processed event, or run again for a failed one, changes nothing', async () => {
    const id = ++externalId;
    assert.equal((await sendInbound(app, JSON.stringify({ ...fixturePayload(), id }), { webhookId: 'processed-then-dead' })).statusCode, 200);
    const processed = await settled('processed-then-dead');
    assert.equal(processed.status, 'processed', processed.error ?? '');
    const failed = await eventOf('expired-last-attempt');

    for (const row of [processed, failed]) {
      const before = (await deadLetterJobs(row.id)).length;
      await app.ctx.queue.sendNow('webhook-inbound-process-dead-letter', { inboundWebhookId: row.id });
      await waitFor(async () => {
        const jobs = await deadLetterJobs(row.id);
        return jobs.length === before + 1 && jobs.every((j) => j.state === 'completed') ? true : undefined;
      });
      const after = await eventOf(row.webhook_id);
      assert.deepEqual(
        { status: after.status, error: after.error, order_id: after.order_id, processed_at: after.processed_at },
        { status: row.status, error: row.error, order_id: row.order_id, processed_at: row.processed_at },
      );
    }
    assert.equal((await ordersFor(id)).length, 1);
  });
});
