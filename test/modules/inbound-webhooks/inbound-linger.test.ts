import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { buildTestApp, waitFor } from '../../helpers/app.ts';
import { fixturePayload, seedProduct, sendInbound, SHOPIFY_SECRET } from '../../helpers/webhooks.ts';

/** Long enough that the checks below run well inside one wait, on a slow machine too. */
const LINGER_MS = 3000;

async function deliver(app: FastifyInstance, externalId: number): Promise<number> {
  const res = await sendInbound(app, JSON.stringify({ ...fixturePayload(), id: externalId }));
  assert.equal(res.statusCode, 200, res.body);
  const row = await app.ctx.db
    .selectFrom('inbound_webhooks')
    .select('id')
    .where('webhook_id', '=', (res.json() as { webhook_id: string }).webhook_id)
    .executeTakeFirstOrThrow();
  return row.id;
}

async function statusOf(app: FastifyInstance, inboundId: number): Promise<string> {
  const row = await app.ctx.db.selectFrom('inbound_webhooks').select('status').where('id', '=', inboundId).executeTakeFirstOrThrow();
  return row.status;
}

/** The state of the processing job linked to stored webhook `inboundId`. */
async function jobStateOf(app: FastifyInstance, inboundId: number): Promise<string> {
  const { rows } = await sql<{ state: string }>`SELECT j.state::text AS state FROM job_links l JOIN pgboss.job j ON j.id = l.job_id
    WHERE l.inbound_webhook_id = ${inboundId} AND l.queue = 'webhook-inbound-process'`.execute(app.ctx.db);
  assert.equal(rows.length, 1, `one processing job for webhook ${inboundId}`);
  return rows[0].state;
}

describe("platform webhooks' processing jobs are fetched and completed in batches (INBOUND_WORKER_LINGER_MS)", () => {
  it('a webhook arriving while the loop waits after a batch is processed with the next fetch, and the first job completes after the wait', async (t) => {
    const app = await buildTestApp(t, { shopifyWebhookSecret: SHOPIFY_SECRET, inboundWorkerLingerMs: LINGER_MS });
    await seedProduct(app, 'MUG-CERAMIC-350', { stock: 100 });
    await seedProduct(app, 'TEA-EARLGREY-100', { stock: 100 });

    // the first webhook after the start is processed and completed at once (no rate yet, lingerFor);
    // one a second later waits as a trickle's does
    const opening = await deliver(app, 8100000000000);
    await waitFor(async () => ((await jobStateOf(app, opening)) === 'completed' ? true : undefined));
    await sleep(1000);

    const first = await deliver(app, 8100000000001);
    await waitFor(async () => ((await statusOf(app, first)) === 'processed' ? true : undefined));
    // processed at once; its job stays active while the loop waits for company
    await sleep(300);
    assert.equal(await jobStateOf(app, first), 'active');

    const second = await deliver(app, 8100000000002);
    await sleep(300);
    assert.equal(await statusOf(app, second), 'received', 'a webhook sent during the wait waits for it');

    await waitFor(async () => ((await statusOf(app, second)) === 'processed' ? true : undefined));
    assert.equal(await jobStateOf(app, first), 'completed');
  });
});
