import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, waitFor, type TestUser } from '../../helpers/app.ts';
import type { Resolver } from '../../../src/modules/outbound-webhooks/ssrf.ts';
import { down, up } from '../../../src/db/migrations/20261126000000_webhook_recovery.ts';
import { BASE, messageStates, sendTestEvent } from './outbound-webhooks.helpers.ts';

/** What the name resolver behind the SSRF guard answers: internal addresses, and one name that does not exist. */
const DNS: Record<string, string[]> = {
  'internal.example.test': ['10.1.2.3'],
  'metadata.example.test': ['169.254.169.254'],
  'mixed.example.test': ['93.184.216.34', '127.0.0.1'],
};
const resolver: Resolver = (hostname, callback) => {
  const addresses = DNS[hostname];
  if (!addresses) {
    const err: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
    err.code = 'ENOTFOUND';
    return callback(err, []);
  }
  callback(null, addresses.map((address) => ({ address, family: net.isIPv6(address) ? 6 : 4 })));
};

/** Text that would tell a subscriber how names resolve inside the service's network. */
const INTERNAL = ['10.1.2.3', '169.254.169.254', '127.0.0.1', '10.0.0.7', 'getaddrinfo', 'ENOTFOUND', 'non-public', 'resolves', 'EUNSAFETARGET'];

/**
 * The SSRF guard on (as in production), with a resolver that maps names to internal addresses: the
 * delivery log and the message view say only "target address not allowed" or "host not found";
 * the cause, with the address, goes to the service log.
 */
describe('outgoing webhooks: no internal detail in what subscribers read', () => {
  let app: FastifyInstance;
  let user: TestUser;
  const logLines: string[] = [];

  before(async () => {
    app = await buildTestApp(
      undefined,
      { webhookAllowPrivateTargets: false, webhookRetrySchedule: [], logLevel: 'info' },
      { webhookResolver: resolver, logStream: { write: (line: string) => void logLines.push(line) } },
    );
    user = await createUser(app);
  });
  after(() => app.close());

  async function failedDelivery(url: string): Promise<{ error: string | null; visible: string }> {
    const created = await api(app, user, { method: 'POST', url: BASE, payload: { url, events: ['order.created'] } });
    assert.equal(created.statusCode, 201, created.body);
    const id = created.json<{ id: number }>().id;
    const messageId = await sendTestEvent(app, user, id);
    await waitFor(async () => ((await messageStates(app, id)).get(messageId) === 'failed' ? true : undefined));
    const log = await api(app, user, { method: 'GET', url: `${BASE}/${id}/deliveries` });
    const view = await api(app, user, { method: 'GET', url: `${BASE}/${id}/messages/${messageId}` });
    const filtered = await api(app, user, { method: 'GET', url: `${BASE}/${id}/deliveries?status=failed` });
    return { error: log.json<{ items: { error: string | null }[] }>().items[0].error, visible: log.body + view.body + filtered.body };
  }

  for (const [host, expected] of [
    ['internal.example.test', 'target address not allowed'],
    ['metadata.example.test', 'target address not allowed'],
    ['mixed.example.test', 'target address not allowed'],
    ['nowhere.example.test', 'host not found'],
  ] as const) {
    it(`${host}: "${expected}", the cause only in the service log`, async () => {
      const { error, visible } = await failedDelivery(`https://${host}/hook`);
      assert.equal(error, expected);
      for (const text of INTERNAL) assert.ok(!visible.includes(text), `subscriber-visible text contains ${text}: ${visible.slice(0, 400)}`);
      const detail = host === 'nowhere.example.test' ? `getaddrinfo ENOTFOUND ${host}` : `${host} resolves to a non-public address`;
      assert.ok(
        logLines.some((l) => l.includes(detail)),
        `the service log has the cause (${detail})`,
      );
    });
  }

  it('an internal address stored before the guard existed is refused at delivery, in the same words', async () => {
    const created = await api(app, user, { method: 'POST', url: BASE, payload: { url: 'https://hooks.example.com/soon-internal', events: ['order.created'] } });
    const id = created.json<{ id: number }>().id;
    await app.ctx.db.updateTable('webhook_subscriptions').set({ url: 'https://10.0.0.7/hook' }).where('id', '=', id).execute();
    const messageId = await sendTestEvent(app, user, id);
    await waitFor(async () => ((await messageStates(app, id)).get(messageId) === 'failed' ? true : undefined));
    const view = await api(app, user, { method: 'GET', url: `${BASE}/${id}/messages/${messageId}` });
    assert.equal(view.json<{ attempts: { error: string }[] }>().attempts[0].error, 'target address not allowed');
    for (const text of INTERNAL) assert.ok(!view.body.includes(text), text);
  });

  it('error texts written by earlier versions are rewritten in the same generic words by the migration', async () => {
    const created = await api(app, user, { method: 'POST', url: BASE, payload: { url: 'https://hooks.example.com/old-log', events: ['order.created'] } });
    const id = created.json<{ id: number }>().id;
    const db = app.ctx.db;
    await down(db as never);
    const old: [string, string][] = [
      ['internal.example.com resolves to a non-public address (10.2.3.4)', 'target address not allowed'],
      ['url must point to a public address', 'target address not allowed'],
      ['ENOTFOUND: getaddrinfo ENOTFOUND metadata.google.internal', 'host not found'],
      ['connect ECONNREFUSED 10.9.8.7:443', 'connection refused'],
      ['UND_ERR_CONNECT_TIMEOUT: Connect Timeout Error (attempted address: 10.0.0.1:443, timeout: 15000ms)', 'timeout after 15 s'],
      ['CERT_HAS_EXPIRED: certificate has expired', 'TLS error'],
      ['something else entirely at 10.1.1.1', 'connection failed'],
      ['HTTP 500: boom', 'HTTP 500: boom'],
      ['timeout after 15 s', 'timeout after 15 s'],
    ];
    for (const [i, [error]] of old.entries()) {
      await db
        .insertInto('webhook_deliveries')
        .values({ subscription_id: id, event_id: null, event_type: 'webhook.test', message_id: `msg_old_${i}`, attempt: 1, status_code: null, duration_ms: 1, success: false, error } as never)
        .execute();
    }
    await up(db as never);
    const rows = await db.selectFrom('webhook_deliveries').select(['message_id', 'error']).where('subscription_id', '=', id).orderBy('id').execute();
    assert.deepEqual(rows.map((r) => r.error), old.map(([, now]) => now));
  });
});
