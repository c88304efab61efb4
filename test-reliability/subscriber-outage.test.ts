import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { Deployment, pick, randInt } from './helpers/deployment.ts';
import { freePort, sleep, until } from './helpers/infra.ts';
import { adminLogin, call, createUsers } from './helpers/http.ts';
import { printTable, round } from './helpers/report.ts';
import type { ServiceProcess } from './helpers/service.ts';

/**
 * Scenario 5 — a subscriber is down (connection refused) while orders change, then comes back and
 * first answers 503 to a burst of requests. Every event must be delivered after recovery, signed
 * (verified with the standardwebhooks package), one webhook-id per event however often it is
 * retried, and per order in `sequence` order.
 */
const ORDERS = 25;
const DOWN_MS = 6000;
const FLAKY_ANSWERS = 25;

interface Received {
  at: number;
  webhookId: string;
  status: number;
  verified: boolean;
  envelope: { id: string; type: string; data: { order_id: number; sequence: number; status: string } } | undefined;
}

class Subscriber {
  readonly received: Received[] = [];
  private server: http.Server | undefined;
  private flakyLeft = 0;
  private readonly port: number;
  private readonly secret: string;

  constructor(port: number, secret: string) {
    this.port = port;
    this.secret = secret;
  }

  async up(flaky: number): Promise<void> {
    this.flakyLeft = flaky;
    const verifier = new Webhook(this.secret);
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
        let envelope: Received['envelope'];
        let verified = false;
        try {
          envelope = verifier.verify(body, headers) as Received['envelope'];
          verified = true;
        } catch {
          verified = false;
        }
        const status = this.flakyLeft-- > 0 ? 503 : verified ? 200 : 400;
        this.received.push({ at: Date.now(), webhookId: headers['webhook-id'], status, verified, envelope });
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(this.port, '127.0.0.1', resolve);
    });
  }

  async down(): Promise<void> {
    const s = this.server;
    if (!s) return;
    this.server = undefined;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
}

describe('reliability: subscriber down for a while, then up', () => {
  let d: Deployment;
  let api: ServiceProcess;
  let subscriber: Subscriber | undefined;

  before(async () => {
    d = await Deployment.create({ redis: false });
    const env = { WEBHOOK_RETRY_SCHEDULE: '0.5,1,1,2,2,2,2,2,2,2,2,2' };
    [api] = await d.start(d.options('api', env, 'api-1'), d.options('worker', env, 'worker-1'), d.options('worker', env, 'worker-2'));
  });

  after(async () => {
    await subscriber?.down();
    await d?.destroy();
  });

  it('every event is delivered after recovery, once per webhook-id, signed, in sequence per order', async () => {
    const admin = await adminLogin(api.baseUrl);
    const [user] = await createUsers(api.baseUrl, admin.access, 1, 'subscriber');
    const initial = await d.inspector.seedProducts('SUB', [30, 1000, 1000]);
    const productIds = [...initial.keys()];
    const port = await freePort();
    const created = await call(api.baseUrl, 'POST', '/api/v1/webhooks/subscriptions', {
      token: user.token,
      body: { url: `http://127.0.0.1:${port}/hook`, events: ['order.created', 'order.status_changed'] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const { id: subscriptionId, secret } = created.body as { id: number; secret: string };
    subscriber = new Subscriber(port, secret);

    // the subscriber is down while the orders are placed and processed
    const downAt = Date.now();
    const orderIds: number[] = [];
    for (let i = 0; i < ORDERS; i++) {
      const items = [{ product_id: pick(productIds), quantity: randInt(1, 5) }];
      const r = await call(api.baseUrl, 'POST', '/api/v1/orders', { token: user.token, body: { items, shipping_address: 'Hook Hill' } });
      assert.equal(r.status, 201, `${JSON.stringify(r.body)}\n--- api output ---\n${api.tail()}`);
      orderIds.push((r.body as { id: number }).id);
    }
    await d.inspector.waitAllFinal(orderIds, 60000);
    await sleep(Math.max(0, DOWN_MS - (Date.now() - downAt)));
    const [attemptsWhileDown] = await d.inspector.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM webhook_deliveries WHERE subscription_id = $1 AND NOT success',
      [subscriptionId],
    );
    await subscriber.up(FLAKY_ANSWERS);
    const upAt = Date.now();

    const events = await d.inspector.query<{ id: number; order_id: number; sequence: number }>(
      'SELECT id, order_id, sequence FROM order_events WHERE order_id = ANY($1::int[]) ORDER BY id',
      [orderIds],
    );
    await until(
      'every message to be settled',
      async () => {
        const [row] = await d.inspector.query<{ open: number }>(
          "SELECT count(*)::int AS open FROM webhook_messages WHERE subscription_id = $1 AND status IN ('held', 'queued')",
          [subscriptionId],
        );
        return row.open === 0 ? true : undefined;
      },
      180000,
      250,
    );
    const settledMs = Date.now() - upAt;
    const messages = await d.inspector.query<{ status: string; n: number; max_attempts: number }>(
      'SELECT status, count(*)::int AS n, max(attempts)::int AS max_attempts FROM webhook_messages WHERE subscription_id = $1 GROUP BY status',
      [subscriptionId],
    );
    const byStatus = Object.fromEntries(messages.map((m) => [m.status, m.n]));

    const rx = subscriber.received;
    const ok = rx.filter((r) => r.status === 200);
    const webhookIdsPerEvent = new Map<string, Set<string>>();
    for (const r of rx) {
      if (!r.envelope) continue;
      if (!webhookIdsPerEvent.has(r.envelope.id)) webhookIdsPerEvent.set(r.envelope.id, new Set());
      webhookIdsPerEvent.get(r.envelope.id)!.add(r.webhookId);
    }
    const eventsWithSeveralIds = [...webhookIdsPerEvent.values()].filter((s) => s.size > 1).length;
    const deliveredEventIds = new Set(ok.map((r) => r.envelope!.id));
    const missing = events.filter((e) => !deliveredEventIds.has(`evt_${e.id}`));
    const duplicatesDelivered = ok.length - new Set(ok.map((r) => r.webhookId)).size;
    // per order: the first successful delivery of each event arrives in sequence order
    const outOfOrder: string[] = [];
    const firstSeen = new Set<string>();
    const lastSeq = new Map<number, number>();
    for (const r of ok) {
      if (firstSeen.has(r.webhookId)) continue;
      firstSeen.add(r.webhookId);
      const { order_id: orderId, sequence } = r.envelope!.data;
      if (sequence !== (lastSeq.get(orderId) ?? 0) + 1) outOfOrder.push(`order ${orderId}: ${lastSeq.get(orderId) ?? 0} → ${sequence}`);
      lastSeq.set(orderId, sequence);
    }

    printTable('scenario 5: subscriber down 6 s, then up (first answers 503)', [
      ['orders / events', `${orderIds.length} / ${events.length}`],
      ['retry schedule (s)', '0.5,1,1,2,2,2,2,2,2,2,2,2'],
      ['failed attempts while down', attemptsWhileDown.n],
      ['requests received after up', rx.length],
      ['answered 503 (flaky start) / 200', `${rx.filter((r) => r.status === 503).length} / ${ok.length}`],
      ['signature verified (standardwebhooks)', `${rx.filter((r) => r.verified).length} / ${rx.length}`],
      ['messages delivered / failed', `${byStatus.delivered ?? 0} / ${byStatus.failed ?? 0}`],
      ['max attempts of one message', Math.max(...messages.map((m) => m.max_attempts))],
      ['up → all settled (s)', round(settledMs / 1000, 1)],
      ['events not delivered', missing.length],
      ['events seen with more than one webhook-id', eventsWithSeveralIds],
      ['repeat deliveries of a delivered webhook-id', duplicatesDelivered],
      ['out-of-sequence first deliveries', outOfOrder.length],
    ]);

    assert.ok(attemptsWhileDown.n > 0, 'deliveries were attempted (and failed) while the subscriber was down');
    assert.ok(rx.every((r) => r.verified), 'every delivery is signed');
    assert.equal(byStatus.failed ?? 0, 0, 'no message gave up');
    assert.equal(byStatus.delivered, events.length, 'one message per event');
    assert.deepEqual(missing, [], 'every event was delivered after recovery');
    assert.equal(eventsWithSeveralIds, 0, 'an event keeps its webhook-id across retries');
    assert.deepEqual(outOfOrder, [], 'per order, events arrive in sequence');
    for (const id of orderIds) assert.ok((lastSeq.get(id) ?? 0) >= 3, `order ${id}: created, processing and a final state delivered`);
  });
});
