import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Deployment, pick, platformOrder, randInt, sendInbound, shopifyHmac } from './helpers/deployment.ts';
import { call, runBounded, Stats, type Result } from './helpers/http.ts';
import { printTable, round } from './helpers/report.ts';
import type { ServiceProcess } from './helpers/service.ts';

/**
 * Scenario 7 — inbound webhook storm: 1,000 platform webhooks, shuffled and sent concurrently to two
 * API processes: 650 distinct orders, 300 duplicates (200 re-sends of the same webhook id, 100
 * replays of the same signed body under a new webhook id) and 50 with a bad signature (wrong
 * secret, missing, or a body changed after signing). Exactly the 650 valid distinct orders become
 * orders and are stored once each; each bad signature is a 401 and stores nothing; everything else
 * is a 200, the 300 duplicates with `duplicate: true`.
 */
const TOTAL = 1000;
const BAD = 50;
const SAME_ID = 200;
const NEW_ID = 100;
const UNIQUE = TOTAL - BAD - SAME_ID - NEW_ID;

interface Planned {
  kind: 'unique' | 'same-id' | 'new-id' | 'bad';
  externalId: number;
  webhookId: string;
  body: string;
  badHow?: 'secret' | 'missing' | 'tampered';
}

function shuffle<T>(a: T[]): T[] {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

describe('reliability: inbound webhook storm', () => {
  let d: Deployment;
  let apis: ServiceProcess[];

  before(async () => {
    d = await Deployment.create({ redis: true });
    apis = await d.startTwoApisTwoWorkers();
  });

  after(async () => {
    await d?.destroy();
  });

  it('1,000 webhooks (30 % duplicates, 5 % bad signatures) → exactly the valid distinct orders', async () => {
    const initial = await d.inspector.seedProducts('STORM', [400, 100000, 100000, 100000]);
    const skus = [...initial.keys()].map((_, i) => `STORM-${i}`);
    const base = 7_000_000_000 + Math.floor(Math.random() * 1_000_000) * 1000;
    const uniques: Planned[] = Array.from({ length: UNIQUE }, (_, i) => {
      const lines = Array.from({ length: randInt(1, 3) }, () => ({ sku: pick(skus), quantity: randInt(1, 4) }));
      return { kind: 'unique', externalId: base + i, webhookId: `storm-${base + i}`, body: platformOrder(base + i, lines, `storm-${i % 40}@example.com`) };
    });
    const plan: Planned[] = [...uniques];
    for (let i = 0; i < SAME_ID; i++) plan.push({ ...pick(uniques), kind: 'same-id' });
    for (let i = 0; i < NEW_ID; i++) {
      const u = pick(uniques);
      plan.push({ ...u, kind: 'new-id', webhookId: `storm-redelivery-${i}-${u.externalId}` });
    }
    const badHows = ['secret', 'missing', 'tampered'] as const;
    for (let i = 0; i < BAD; i++) {
      const id = base + 900 + i;
      plan.push({
        kind: 'bad',
        externalId: id,
        webhookId: `storm-bad-${id}`,
        body: platformOrder(id, [{ sku: skus[1], quantity: 1 }], 'storm-bad@example.com'),
        badHow: badHows[i % 3],
      });
    }
    shuffle(plan);
    assert.equal(plan.length, TOTAL);

    const results: { p: Planned; r: Result }[] = [];
    const started = Date.now();
    await runBounded(16, { maxTasks: plan.length }, async (i) => {
      const p = plan[i];
      const baseUrl = apis[i % 2].baseUrl;
      let r: Result;
      if (p.kind !== 'bad') r = await sendInbound(baseUrl, p.body, p.webhookId);
      else if (p.badHow === 'secret') r = await sendInbound(baseUrl, p.body, p.webhookId, { badSignature: true });
      else {
        const body = p.badHow === 'tampered' ? p.body.replace('"quantity":1', '"quantity":999') : p.body;
        const headers: Record<string, string> = { 'content-type': 'application/json', 'x-shopify-webhook-id': p.webhookId, 'x-shopify-topic': 'orders/create' };
        if (p.badHow === 'tampered') headers['x-shopify-hmac-sha256'] = shopifyHmac(p.body);
        r = await call(baseUrl, 'POST', '/api/v1/webhooks/orders/create', { raw: body, headers });
      }
      results.push({ p, r });
    });
    const sendSeconds = (Date.now() - started) / 1000;

    const drainStarted = Date.now();
    await d.inspector.waitAllFinal(undefined, 180000);
    await d.inspector.waitInboundSettled(120000);
    await d.inspector.waitAllFinal(undefined, 120000);
    const drainMs = Date.now() - drainStarted;

    const stats = new Stats();
    for (const { r } of results) stats.add(r);
    const wrong = results.filter(({ p, r }) => r.status !== (p.kind === 'bad' ? 401 : 200));
    const badBodies = results.filter(({ p }) => p.kind === 'bad').map(({ r }) => r.body as { error_code?: string });
    const duplicateFlags = results.filter(({ r }) => r.status === 200 && (r.body as { duplicate?: boolean }).duplicate === true).length;
    const [orders] = await d.inspector.query<{ n: number; distinct_ext: number }>(
      "SELECT count(*)::int AS n, count(DISTINCT external_id)::int AS distinct_ext FROM orders WHERE source = 'shopify'",
    );
    const stored = await d.inspector.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM inbound_webhooks GROUP BY status');
    const storedBy = Object.fromEntries(stored.map((s) => [s.status, s.n]));
    const externals = new Set(
      (await d.inspector.query<{ external_id: string }>("SELECT external_id FROM orders WHERE source = 'shopify'")).map((r) => r.external_id),
    );
    const missing = uniques.filter((u) => !externals.has(String(u.externalId)));
    const fromBad = plan.filter((p) => p.kind === 'bad' && externals.has(String(p.externalId)));
    const [badStored] = await d.inspector.query<{ n: number }>("SELECT count(*)::int AS n FROM inbound_webhooks WHERE webhook_id LIKE 'storm-bad-%'");
    const { reserved } = await d.inspector.assertStockInvariant(initial);
    await d.inspector.assertOrderEvents();
    const counts = await d.inspector.statusCounts();
    const ackStats = new Stats();
    for (const { p, r } of results) if (p.kind !== 'bad') ackStats.add(r);

    printTable('scenario 7: inbound webhook storm, 2 API + 2 worker processes', [
      ['webhooks sent (concurrency 16)', results.length],
      ['distinct valid / same-id repeats / new-id replays / bad signature', `${UNIQUE} / ${SAME_ID} / ${NEW_ID} / ${BAD}`],
      ['statuses', stats.statuses()],
      ['sent in (s)', round(sendSeconds, 1)],
      ['ack latency p50 / p95 / p99 (ms)', `${round(ackStats.percentile(50))} / ${round(ackStats.percentile(95))} / ${round(ackStats.percentile(99))}`],
      ['answered duplicate: true', duplicateFlags],
      ['inbound rows stored (processed / failed / received)', `${storedBy.processed ?? 0} / ${storedBy.failed ?? 0} / ${storedBy.received ?? 0}`],
      ['orders from the platform (distinct external ids)', `${orders.n} (${orders.distinct_ext})`],
      ['orders completed / failed', `${counts.completed ?? 0} / ${counts.failed ?? 0}`],
      ['units reserved', reserved],
      ['processing drained in (ms)', drainMs],
      ['unexpected statuses', wrong.length],
    ]);

    assert.deepEqual(wrong.map(({ p, r }) => `${p.kind}/${p.badHow ?? ''}: ${r.status} ${r.error ?? ''}`).slice(0, 5), []);
    assert.ok(badBodies.every((b) => b.error_code === 'INVALID_SIGNATURE'));
    assert.equal(badStored.n, 0, 'a bad signature stores nothing');
    assert.equal(duplicateFlags, SAME_ID + NEW_ID, 'every repeat of a webhook id or of a signed body (and only those) is acknowledged as a duplicate');
    assert.equal(storedBy.processed ?? 0, UNIQUE, 'each distinct body is stored once and processed');
    assert.equal(orders.n, UNIQUE, 'exactly the distinct valid orders became orders');
    assert.equal(orders.distinct_ext, UNIQUE);
    assert.deepEqual(missing.map((m) => m.externalId), []);
    assert.deepEqual(fromBad.map((m) => m.externalId), [], 'no order from a badly signed webhook');
  });
});
