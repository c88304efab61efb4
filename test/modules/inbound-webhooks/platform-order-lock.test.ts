import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { buildTestApp, untilWaitingForLock, waitFor } from '../../helpers/app.ts';
import { fixturePayload, seedProduct, sendInbound, SHOPIFY_SECRET } from '../../helpers/webhooks.ts';

const onServer = Boolean(process.env.TEST_DATABASE_URL);

/**
 * The processing of a platform order's webhooks is serialised by a transaction-scoped lock on the
 * platform order, taken with the stored event's row lock (lockForPlatformOrder). Needs a server:
 * embedded PGlite runs one transaction at a time.
 */
describe("a platform order's lock (PostgreSQL)", { skip: !onServer && 'needs TEST_DATABASE_URL' }, () => {
  it('holds the processing of its orders/create until the transaction holding it ends', async (t) => {
    const app = await buildTestApp(t, { shopifyWebhookSecret: SHOPIFY_SECRET });
    await seedProduct(app, 'MUG-CERAMIC-350', { stock: 100 });
    await seedProduct(app, 'TEA-EARLGREY-100', { stock: 100 });
    const externalId = 8200000000001;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    // another transaction (a cancellation being processed, say) holds the platform order's lock
    const holder = app.ctx.db.transaction().execute(async (trx) => {
      await sql`SELECT pg_advisory_xact_lock(hashtext(${`platform-order:shopify:${externalId}`}))`.execute(trx);
      locked();
      await released;
    });
    await isLocked;
    try {
      const res = await sendInbound(app, JSON.stringify({ ...fixturePayload(), id: externalId }));
      assert.equal(res.statusCode, 200, res.body);
      const webhookId = (res.json() as { webhook_id: string }).webhook_id;
      const statusOf = async () =>
        (await app.ctx.db.selectFrom('inbound_webhooks').select('status').where('webhook_id', '=', webhookId).executeTakeFirstOrThrow()).status;
      await untilWaitingForLock(app, 'advisory');
      assert.equal(await statusOf(), 'received', 'the processing waits for the lock');
      release();
      await holder;
      await waitFor(async () => ((await statusOf()) === 'processed' ? true : undefined));
    } finally {
      release();
      await holder;
    }
  });
});
