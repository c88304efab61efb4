import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { api, buildTestApp, createUser, waitFor, type TestUser } from '../helpers/app.ts';
import { createProduct } from '../helpers/products.ts';
import { waitForFinal } from '../helpers/orders.ts';
import { fixturePayload, seedProduct, sendInbound, SHOPIFY_SECRET, startReceiver, type Receiver } from '../helpers/webhooks.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { purgeInBatches, retentionCutoff } from '../../src/jobs/retention.ts';
import { HOUSEKEEPING_RETRY } from '../../src/jobs/queue.ts';
import type { JobName } from '../../src/jobs/registry.ts';
import { purgeSettledMessages } from '../../src/modules/outbound-webhooks/trace.repository.ts';

const DAY = 24 * 3600 * 1000;
const daysAgo = (n: number) => new Date(Date.now() - n * DAY);

describe('retention: scheduled purges of outgoing messages, inbound payloads and finished jobs', () => {
  let app: FastifyInstance;
  let admin: TestUser;
  let alice: TestUser;
  let receiver: Receiver;
  let subscriptionId: number;

  const count = async (query: string) => Number((await sql<{ n: number }>`${sql.raw(query)}`.execute(app.ctx.db)).rows[0].n);
  const placeOrder = async () => {
    const product = await createProduct(app, { stock: 100 });
    const res = await api(app, alice, { method: 'POST', url: '/api/v1/orders', payload: { items: [{ product_id: product.id, quantity: 1 }], shipping_address: 'x' } });
    const id = res.json<{ id: number }>().id;
    await waitForFinal(app, id);
    return id;
  };
  /** Runs a purge the way its schedule does (a job on its queue) and waits for the job to finish. */
  const runPurge = async (queue: JobName) => {
    const jobId = await app.ctx.queue.boss.send(queue, {});
    assert.ok(jobId);
    await waitFor(async () => {
      const job = await app.ctx.queue.boss.getJobById(queue, jobId);
      if (job?.state === 'failed') throw new Error(`${queue} failed: ${JSON.stringify(job.output)}`);
      return job?.state === 'completed' ? true : undefined;
    });
  };
  const untouchable = async () => ({
    orders: await count('SELECT count(*) AS n FROM orders'),
    events: await count('SELECT count(*) AS n FROM order_events'),
    users: await count('SELECT count(*) AS n FROM users'),
  });

  before(async () => {
    receiver = await startReceiver();
    app = await buildTestApp(undefined, { shopifyWebhookSecret: SHOPIFY_SECRET });
    admin = await createUser(app, { admin: true });
    alice = await createUser(app);
    const sub = await api(app, alice, { method: 'POST', url: '/api/v1/webhooks/subscriptions', payload: { url: receiver.url, events: ['order.created', 'order.status_changed'] } });
    subscriptionId = sub.json<{ id: number }>().id;
    await seedProduct(app, 'MUG-CERAMIC-350', { stock: 100 });
    await seedProduct(app, 'TEA-EARLGREY-100', { stock: 100 });
  });
  after(async () => {
    await app.close();
    await receiver.close();
  });

  it('a failed purge is retried a minute later, so its queue is polled once a minute, not every second', async () => {
    for (const name of ['jobs-purge', 'webhook-messages-purge', 'inbound-payloads-purge', 'refresh-tokens-purge', 'idempotency-keys-purge'] as const) {
      const queue = await app.ctx.queue.boss.getQueue(name);
      assert.equal(queue?.retryDelay, HOUSEKEEPING_RETRY.retryDelay, name);
      assert.equal(queue?.retryBackoff, true, name);
    }
  });

  it('defaults: 30 days for outgoing messages and inbound payloads, 7 for jobs; 0 keeps forever; anything else is refused', () => {
    const config = loadConfig({});
    assert.equal(config.webhookMessageRetentionDays, 30);
    assert.equal(config.inboundPayloadRetentionDays, 30);
    assert.equal(config.jobRetentionDays, 7);
    const set = loadConfig({ WEBHOOK_MESSAGE_RETENTION_DAYS: '90', INBOUND_PAYLOAD_RETENTION_DAYS: '0', JOB_RETENTION_DAYS: '2' });
    assert.deepEqual([set.webhookMessageRetentionDays, set.inboundPayloadRetentionDays, set.jobRetentionDays], [90, 0, 2]);
    assert.throws(() => loadConfig({ JOB_RETENTION_DAYS: '-1' }), ConfigError);
    assert.throws(() => loadConfig({ WEBHOOK_MESSAGE_RETENTION_DAYS: 'a month' }), ConfigError);
    assert.equal(retentionCutoff(0), undefined);
    assert.equal(retentionCutoff(7, 10 * DAY)?.getTime(), 3 * DAY);
  });

  it('each purge is scheduled hourly on its own queue; pg-boss deletes finished jobs after JOB_RETENTION_DAYS', async () => {
    for (const [queue, cron] of [
      ['webhook-messages-purge', '47 * * * *'],
      ['inbound-payloads-purge', '37 * * * *'],
      ['jobs-purge', '57 * * * *'],
    ] as const) {
      const schedules = await app.ctx.queue.boss.getSchedules(queue);
      assert.equal(schedules.length, 1, queue);
      assert.equal(schedules[0].cron, cron);
    }
    const queues = (await app.ctx.queue.boss.getQueues()).filter((q) => !q.name.startsWith('__pgboss__'));
    assert.ok(queues.length >= 10);
    for (const queue of queues) assert.equal(queue.deleteAfterSeconds, 7 * 86400, queue.name);
  });

  it('deletes delivered and failed messages settled before the retention period, with their attempts; keeps the rest', async () => {
    const orderId = await placeOrder();
    await waitFor(async () => ((await count(`SELECT count(*) AS n FROM webhook_messages WHERE order_id = ${orderId} AND status = 'delivered'`)) === 3 ? true : undefined));
    const recent = await placeOrder();
    await waitFor(async () => ((await count(`SELECT count(*) AS n FROM webhook_messages WHERE order_id = ${recent} AND status = 'delivered'`)) === 3 ? true : undefined));
    // the first order's messages were settled 31 days ago, one of them as failed; a message still waiting is as old
    await app.ctx.db.updateTable('webhook_messages').set({ settled_at: daysAgo(31) }).where('order_id', '=', orderId).execute();
    await sql`UPDATE webhook_messages SET status = 'failed' WHERE id = (SELECT min(id) FROM webhook_messages WHERE order_id = ${orderId})`.execute(app.ctx.db);
    await app.ctx.db
      .insertInto('webhook_messages')
      .values({ message_id: 'msg_old_waiting', subscription_id: subscriptionId, event_id: null, order_id: null, event_type: 'webhook.test', payload: '{}', status: 'queued', created_at: daysAgo(40) })
      .execute();
    const oldIds = (await app.ctx.db.selectFrom('webhook_messages').select('message_id').where('order_id', '=', orderId).execute()).map((m) => m.message_id);
    assert.equal(await count(`SELECT count(*) AS n FROM webhook_deliveries WHERE message_id IN ('${oldIds.join("','")}')`), 3);
    const kept = await untouchable();

    await runPurge('webhook-messages-purge');

    assert.equal(await count(`SELECT count(*) AS n FROM webhook_messages WHERE order_id = ${orderId}`), 0);
    assert.equal(await count(`SELECT count(*) AS n FROM webhook_deliveries WHERE message_id IN ('${oldIds.join("','")}')`), 0, 'their attempts too');
    assert.equal(await count(`SELECT count(*) AS n FROM webhook_messages WHERE order_id = ${recent}`), 3);
    assert.equal(await count(`SELECT count(*) AS n FROM webhook_messages WHERE message_id = 'msg_old_waiting'`), 1, 'never a message still to deliver');
    // through the API: the subscription's attempt log holds only the recent order's attempts
    const log = await api(app, alice, { method: 'GET', url: `/api/v1/webhooks/subscriptions/${subscriptionId}/deliveries?page_size=100` });
    assert.equal(log.json<{ total: number }>().total, 3);
    // and the purged order's trace has no deliveries left, while the order and its events are all there
    const trace = (await api(app, admin, { method: 'GET', url: `/api/v1/admin/orders/${orderId}/trace` })).json<{ deliveries: unknown[]; events: unknown[] }>();
    assert.deepEqual(trace.deliveries, []);
    assert.equal(trace.events.length, 3);
    assert.deepEqual(await untouchable(), kept, 'orders, order events and users are never purged');
    await app.ctx.db.deleteFrom('webhook_messages').where('message_id', '=', 'msg_old_waiting').execute();
  });

  it('works in bounded batches: each statement removes at most its batch, the loop goes on until a batch comes back short', async () => {
    const orderIds = [await placeOrder(), await placeOrder()];
    await waitFor(async () => ((await count(`SELECT count(*) AS n FROM webhook_messages WHERE order_id IN (${orderIds}) AND status = 'delivered'`)) === 6 ? true : undefined));
    await app.ctx.db.updateTable('webhook_messages').set({ settled_at: daysAgo(100) }).where('order_id', 'in', orderIds).execute();
    const batches: number[] = [];
    const total = await purgeInBatches('test', app.ctx.log, async (limit) => {
      const n = await purgeSettledMessages(app.ctx.db, daysAgo(30), limit);
      batches.push(n);
      return n;
    }, { batchSize: 4 });
    assert.equal(total, 6);
    assert.deepEqual(batches, [4, 2]);
    // a time budget stops a long purge between batches; the next run goes on
    const spent = await purgeInBatches('test', app.ctx.log, async (limit) => limit, { batchSize: 10, budgetMs: 0 });
    assert.equal(spent, 10);
  });

  it('removes the payload of platform webhooks processed before the retention period; the record, its order link and its dedupe stay', async () => {
    const body = (id: number) => JSON.stringify({ ...fixturePayload(), id });
    await sendInbound(app, body(660000000001), { webhookId: 'retention-old' });
    await sendInbound(app, body(660000000002), { webhookId: 'retention-recent' });
    await sendInbound(app, '{"no": "order"}', { webhookId: 'retention-failed' });
    const settled = async (webhookId: string) =>
      waitFor(async () => {
        const row = await app.ctx.db.selectFrom('inbound_webhooks').selectAll().where('webhook_id', '=', webhookId).executeTakeFirst();
        return row && row.status !== 'received' ? row : undefined;
      });
    const old = await settled('retention-old');
    const recentOrder = (await settled('retention-recent')).order_id!;
    await settled('retention-failed');
    for (const id of [old.order_id!, recentOrder]) await waitForFinal(app, id);
    await app.ctx.db.updateTable('inbound_webhooks').set({ processed_at: daysAgo(31) }).where('webhook_id', 'in', ['retention-old', 'retention-failed']).execute();
    const kept = await untouchable();

    await runPurge('inbound-payloads-purge');

    const rows = new Map((await app.ctx.db.selectFrom('inbound_webhooks').selectAll().execute()).map((r) => [r.webhook_id, r]));
    const purged = rows.get('retention-old')!;
    assert.equal(purged.raw_body, null);
    assert.deepEqual(purged.headers, {});
    assert.ok(purged.payload_purged_at);
    assert.equal(purged.status, 'processed');
    assert.equal(purged.order_id, old.order_id);
    assert.ok(rows.get('retention-recent')!.raw_body, 'a recent payload stays');
    assert.ok(rows.get('retention-failed')!.raw_body, 'a failed webhook keeps its payload, to be processed again');

    const detail = (await api(app, admin, { method: 'GET', url: `/api/v1/admin/inbound-webhooks/${old.id}` })).json();
    assert.equal(detail.raw_body, null);
    assert.equal(detail.raw_body_encoding, null);
    assert.deepEqual(detail.headers, {});
    assert.ok(detail.payload_purged_at);
    assert.equal(detail.order_id, old.order_id);
    const reprocess = await api(app, admin, { method: 'POST', url: `/api/v1/admin/inbound-webhooks/${old.id}/reprocess` });
    assert.equal(reprocess.statusCode, 400);
    assert.equal(reprocess.json().error_code, 'INVALID_STATE');
    // the platform sending it again is still recognised as a repeat
    const again = await sendInbound(app, body(660000000001), { webhookId: 'retention-old' });
    assert.equal(again.json().duplicate, true);
    assert.deepEqual(await untouchable(), kept);
  });

  it('deletes the links of jobs older than the retention period and a grace period; the order stays whole', async () => {
    const orderId = await placeOrder();
    const jobsOf = async () =>
      (await api(app, admin, { method: 'GET', url: `/api/v1/admin/orders/${orderId}/trace` })).json<{ jobs: { id: string; queue: string; state: string }[] }>().jobs;
    const jobs = await waitFor(async () => {
      const list = await jobsOf();
      return list.length > 0 && list.every((j) => j.state === 'completed') ? list : undefined;
    });
    const processing = jobs.find((j) => j.queue === 'order-process')!;
    // that order's processing job was sent 22 days ago: past the 7 days of its job and 14 of grace
    await sql`UPDATE job_links SET created_at = now() - interval '22 days' WHERE job_id = ${processing.id}::uuid`.execute(app.ctx.db);
    // the links sent until now (jobs go on being sent meanwhile: order events are published after the change)
    const recent = await app.ctx.db.selectFrom('job_links').select('job_id').where(sql<boolean>`created_at > now() - interval '1 day'`).execute();
    const kept = await untouchable();

    await runPurge('jobs-purge');

    assert.equal(await count(`SELECT count(*) AS n FROM job_links WHERE job_id = '${processing.id}'`), 0, 'its link is gone');
    const left = await app.ctx.db.selectFrom('job_links').select('job_id').where('job_id', 'in', recent.map((r) => r.job_id)).execute();
    assert.equal(left.length, recent.length, 'the recent ones stay');
    assert.ok(!(await jobsOf()).some((j) => j.id === processing.id), 'the trace no longer finds the job');
    assert.deepEqual(await untouchable(), kept);
    const order = (await api(app, admin, { method: 'GET', url: `/api/v1/admin/orders/${orderId}` })).json<{ status: string; events: unknown[] }>();
    assert.equal(order.status, 'completed');
    assert.equal(order.events.length, 3);
  });
});
