import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { loadConfig } from '../../../src/config.ts';
import { buildTestApp, waitFor } from '../../helpers/app.ts';
import { fixturePayload, seedProduct, sendInbound, SHOPIFY_SECRET } from '../../helpers/webhooks.ts';

let order = 7100000000000;
const freshBody = () => JSON.stringify({ ...fixturePayload(), id: ++order });

describe('platform webhook replays', () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestApp(undefined, { shopifyWebhookSecret: SHOPIFY_SECRET });
    await seedProduct(app, 'MUG-CERAMIC-350', { stock: 1000 });
    await seedProduct(app, 'TEA-EARLGREY-100', { stock: 1000 });
  });
  after(() => app.close());

  const storedWith = async (body: string) =>
    Number(
      (
        await sql<{ n: number }>`SELECT count(*)::int AS n FROM inbound_webhooks WHERE raw_body = ${body}`.execute(app.ctx.db)
      ).rows[0].n,
    );
  const receipt = (res: { statusCode: number; json: () => unknown }) => {
    assert.equal(res.statusCode, 200);
    return res.json() as { status: string; webhook_id: string; duplicate: boolean };
  };

  it('a captured signed body sent again under a new webhook id is a duplicate: 200, not stored or queued again', async () => {
    const body = freshBody();
    assert.equal(receipt(await sendInbound(app, body, { webhookId: 'replay-original' })).duplicate, false);
    for (let i = 0; i < 3; i++) {
      const again = receipt(await sendInbound(app, body, { webhookId: `replay-copy-${i}` }));
      assert.equal(again.duplicate, true, `copy ${i}`);
    }
    assert.equal(await storedWith(body), 1);
    // with no webhook id at all too
    assert.equal(receipt(await sendInbound(app, body, { webhookId: null })).duplicate, true);
    assert.equal(await storedWith(body), 1);
  });

  it('a repeated X-Shopify-Event-Id is a duplicate, whatever the webhook id and body', async () => {
    const first = receipt(await sendInbound(app, freshBody(), { eventId: 'evt-replay-1' }));
    assert.equal(first.duplicate, false);
    const other = freshBody();
    const second = receipt(await sendInbound(app, other, { eventId: 'evt-replay-1' }));
    assert.equal(second.duplicate, true);
    assert.equal(await storedWith(other), 0);
    const row = await app.ctx.db.selectFrom('inbound_webhooks').select(['event_id', 'body_sha256']).where('webhook_id', '=', first.webhook_id).executeTakeFirstOrThrow();
    assert.equal(row.event_id, 'evt-replay-1');
    assert.match(row.body_sha256 ?? '', /^[0-9a-f]{64}$/);
    // the database itself refuses a second row with that event id
    await assert.rejects(
      sql`INSERT INTO inbound_webhooks (webhook_id, event_id, headers, raw_body) VALUES ('direct', 'evt-replay-1', '{}', '{}')`.execute(app.ctx.db),
      /unique|duplicate/i,
    );
  });

  it('copies of one body arriving together are stored once (the digest is locked, not checked then inserted)', async () => {
    const body = freshBody();
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => sendInbound(app, body, { webhookId: `together-${i}` })));
    const duplicates = answers.map(receipt).filter((r) => r.duplicate).length;
    assert.equal(duplicates, 11);
    assert.equal(await storedWith(body), 1);
  });

  /** Makes the stored copy of `webhookId` look received `days` ago (past the former 24 h window). */
  const age = (webhookId: string, days: number) =>
    app.ctx.db.updateTable('inbound_webhooks').set({ received_at: new Date(Date.now() - days * 86400 * 1000) }).where('webhook_id', '=', webhookId).execute();

  it('a body stored before is a duplicate for as long as it is kept, not only within 24 h', async () => {
    const body = freshBody();
    const first = receipt(await sendInbound(app, body));
    await age(first.webhook_id, 20);
    assert.equal(receipt(await sendInbound(app, body)).duplicate, true);
    assert.equal(await storedWith(body), 1);
  });

  it('the topic is the route\'s: a mismatching X-Shopify-Topic is 401 and nothing is stored', async () => {
    const body = freshBody();
    for (const [url, topic] of [
      ['/api/v1/webhooks/orders/create', 'orders/cancelled'],
      ['/api/v1/webhooks/orders/cancelled', 'orders/create'],
      ['/api/v2/webhooks/orders/create', 'orders/updated'],
    ]) {
      const res = await sendInbound(app, body, { url, topic, webhookId: `topic-${topic}-${url}` });
      assert.equal(res.statusCode, 401, `${url} ${topic}: ${res.body}`);
      assert.deepEqual(Object.keys(res.json() as object).sort(), ['detail', 'error_code']);
      assert.equal((res.json() as { error_code: string }).error_code, 'INVALID_SIGNATURE');
    }
    assert.equal(await storedWith(body), 0);
    // a missing topic takes the route's
    const res = receipt(await sendInbound(app, freshBody(), { url: '/api/v1/webhooks/orders/cancelled', topic: '' }));
    const row = await app.ctx.db.selectFrom('inbound_webhooks').select('topic').where('webhook_id', '=', res.webhook_id).executeTakeFirstOrThrow();
    assert.equal(row.topic, 'orders/cancelled');
  });

  it('finding 4: a create body resent to the cancellation route after the former window cancels nothing', async () => {
    const body = freshBody();
    const created = receipt(await sendInbound(app, body));
    const externalId = String((JSON.parse(body) as { id: number }).id);
    const orderRow = await waitFor(async () => app.ctx.db.selectFrom('orders').select(['id', 'status']).where('external_id', '=', externalId).executeTakeFirst());
    await age(created.webhook_id, 2);
    const replay = receipt(await sendInbound(app, body, { url: '/api/v1/webhooks/orders/cancelled', topic: 'orders/cancelled', webhookId: 'resent-as-cancel' }));
    assert.equal(replay.duplicate, true);
    assert.equal(await storedWith(body), 1);
    const after = await app.ctx.db.selectFrom('orders').select('status').where('id', '=', orderRow.id).executeTakeFirstOrThrow();
    assert.notEqual(after.status, 'cancelled');
    const cancellations = await app.ctx.db.selectFrom('platform_cancellations').selectAll().where('external_id', '=', externalId).execute();
    assert.deepEqual(cancellations, []);
  });

  it('INBOUND_REPLAY_WINDOW_SECONDS is read and validated; 0 turns the digest check off', async (t) => {
    assert.equal(loadConfig({}).inboundReplayWindowSeconds, 86400);
    assert.equal(loadConfig({ INBOUND_REPLAY_WINDOW_SECONDS: '600' }).inboundReplayWindowSeconds, 600);
    assert.throws(() => loadConfig({ INBOUND_REPLAY_WINDOW_SECONDS: '-1' }));
    const off = await buildTestApp(t, { shopifyWebhookSecret: SHOPIFY_SECRET, inboundReplayWindowSeconds: 0 });
    const body = freshBody();
    assert.equal(receipt(await sendInbound(off, body)).duplicate, false);
    assert.equal(receipt(await sendInbound(off, body)).duplicate, false);
  });
});
