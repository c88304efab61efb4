import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { api, buildTestApp, createUser, untilWaitingForLock, waitFor } from '../../helpers/app.ts';
import { createProduct } from '../../helpers/products.ts';
import { freePort } from '../../helpers/server-process.ts';
import { BASE, placeOrder, subscribe } from './outbound-webhooks.helpers.ts';

const onServer = Boolean(process.env.TEST_DATABASE_URL);

/** PostgreSQL's count of deadlocks in the test's database (read on a connection of its own). */
async function deadlocks(databaseUrl: string): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>('SELECT deadlocks AS n FROM pg_stat_database WHERE datname = current_database()');
    return Number(rows[0].n);
  } finally {
    await client.end();
  }
}

/**
 * Issue 53's reproduction: four subscriptions to a closed port, 60 orders, short retries, and a
 * subscription disabled and deleted at once, by hand, while its messages fail for good (and the
 * service disables the others after their run of failures). Every transaction takes a
 * subscription's row before its messages, so none of them deadlock, and neither request answers
 * 500. Needs a server: embedded PGlite runs one transaction at a time.
 */
describe('outgoing webhooks: disabling a subscription while its messages fail (PostgreSQL)', { skip: !onServer && 'needs TEST_DATABASE_URL' }, () => {
  it('answers PATCH is_active:false and DELETE without a 500, and PostgreSQL counts no deadlock', async (t) => {
    const app = await buildTestApp(t, { webhookRetrySchedule: [1, 1, 1], webhookMaxConcurrencyPerHost: 8 });
    const databaseUrl = app.ctx.config.databaseUrl!;
    const before = await deadlocks(databaseUrl);
    const owner = await createUser(app);
    // nothing listens there: every delivery is refused at once
    const port = await freePort();
    const subs = [];
    for (let i = 0; i < 4; i++) subs.push(await subscribe(app, owner, `http://127.0.0.1:${port}/hook/${i}`));
    const product = await createProduct(app, { stock: 1000, price: '1.00' });
    for (let i = 0; i < 60; i++) await placeOrder(app, owner, product.id);

    const failed = async (subscriptionId: number) =>
      (await app.ctx.db.selectFrom('webhook_messages').select('id').where('subscription_id', '=', subscriptionId).where('status', '=', 'failed').limit(1).execute()).length;
    const answers: number[] = [];
    // two of them by hand, each once its first messages failed for good
    for (const sub of subs.slice(0, 2)) {
      await waitFor(async () => ((await failed(sub.id)) > 0 ? true : undefined), 60_000);
      const [patched, deleted] = await Promise.all([
        api(app, owner, { method: 'PATCH', url: `${BASE}/${sub.id}`, payload: { is_active: false } }),
        api(app, owner, { method: 'DELETE', url: `${BASE}/${sub.id}` }),
      ]);
      answers.push(patched.statusCode, deleted.statusCode);
      assert.ok([200, 404].includes(patched.statusCode), `PATCH ${patched.statusCode}: ${patched.body}`);
      assert.equal(deleted.statusCode, 204, deleted.body);
    }
    // every message settles: failed by hand, by the service's disabling, or after its last retry
    await waitFor(async () => {
      const pending = await app.ctx.db.selectFrom('webhook_messages').select('id').where('status', 'in', ['held', 'queued']).limit(1).execute();
      return pending.length === 0 ? true : undefined;
    }, 90_000);
    const messages = await app.ctx.db.selectFrom('webhook_messages').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
    assert.ok(Number(messages.n) >= 4 * 60, `messages: ${messages.n}`);
    // and every event was handed to the listeners
    const unpublished = await app.ctx.db.selectFrom('order_events').select('id').where('published', '=', false).execute();
    assert.deepEqual(unpublished, []);
    // the app's connections end with it, and each backend's counts reach the statistics as it exits
    await app.close();
    assert.equal(await deadlocks(databaseUrl), before, `answers ${answers.join(' ')}`);
  });

  it('a resend that meets a disabling in flight waits for it and is refused; nothing goes back into delivery', async (t) => {
    const app = await buildTestApp(t, { webhookRetrySchedule: [0.1] });
    const owner = await createUser(app);
    const sub = await subscribe(app, owner, `http://127.0.0.1:${await freePort()}/hook`, ['order.created']);
    await placeOrder(app, owner, (await createProduct(app, { stock: 5, price: '1.00' })).id);
    const message = await waitFor(async () =>
      app.ctx.db.selectFrom('webhook_messages').select(['id', 'message_id']).where('subscription_id', '=', sub.id).where('status', '=', 'failed').executeTakeFirst(),
    30_000);
    // a disabling that has taken the subscription's row and not committed yet
    const disabling = new pg.Client({ connectionString: app.ctx.config.databaseUrl! });
    await disabling.connect();
    disabling.on('error', () => {}); // the test database is dropped, its sessions ended, when the test ends
    await disabling.query('BEGIN');
    await disabling.query('UPDATE webhook_subscriptions SET is_active = false WHERE id = $1', [sub.id]);
    const resend = api(app, owner, { method: 'POST', url: `${BASE}/${sub.id}/messages/${message.message_id}/resend` });
    await untilWaitingForLock(app);
    await disabling.query('COMMIT');
    await disabling.end();
    const res = await resend;
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(res.json<{ error_code: string }>().error_code, 'INVALID_STATE');
    const after = await app.ctx.db.selectFrom('webhook_messages').select('status').where('id', '=', message.id).executeTakeFirstOrThrow();
    assert.equal(after.status, 'failed');
  });
});
