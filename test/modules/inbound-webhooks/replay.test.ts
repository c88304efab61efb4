import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { loadConfig } from '../../../src/config.ts';
import { buildTestApp } from '../../helpers/app.ts';
import { fixturePayload, sendInbound, SHOPIFY_SECRET } from '../../helpers/webhooks.ts';

let order = 7100000000000;
const freshBody = () => JSON.stringify({ ...fixturePayload(), id: ++order });

describe('platform webhook replays', () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestApp(undefined, { shopifyWebhookSecret: SHOPIFY_SECRET });
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

  it('outside the replay window the same body is a new delivery', async () => {
    const body = freshBody();
    const first = receipt(await sendInbound(app, body));
    await app.ctx.db
      .updateTable('inbound_webhooks')
      .set({ received_at: new Date(Date.now() - (app.ctx.config.inboundReplayWindowSeconds + 60) * 1000) })
      .where('webhook_id', '=', first.webhook_id)
      .execute();
    assert.equal(receipt(await sendInbound(app, body)).duplicate, false);
    assert.equal(await storedWith(body), 2);
  });

  it('the window is 24 h by default, INBOUND_REPLAY_WINDOW_SECONDS sets it, 0 turns the digest check off', async (t) => {
    assert.equal(loadConfig({}).inboundReplayWindowSeconds, 86400);
    assert.equal(loadConfig({ INBOUND_REPLAY_WINDOW_SECONDS: '600' }).inboundReplayWindowSeconds, 600);
    assert.throws(() => loadConfig({ INBOUND_REPLAY_WINDOW_SECONDS: '-1' }));
    const off = await buildTestApp(t, { shopifyWebhookSecret: SHOPIFY_SECRET, inboundReplayWindowSeconds: 0 });
    const body = freshBody();
    assert.equal(receipt(await sendInbound(off, body)).duplicate, false);
    assert.equal(receipt(await sendInbound(off, body)).duplicate, false);
  });
});
