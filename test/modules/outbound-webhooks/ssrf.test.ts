import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type dns from 'node:dns';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, errorBody, type TestUser } from '../../helpers/app.ts';
import { createDeliveryAgent, guardedLookup, isPublicAddress, targetUrlProblem, type Resolver } from '../../../src/modules/outbound-webhooks/ssrf.ts';
import { sendSignedMessage } from '../../../src/modules/outbound-webhooks/sender.ts';

const BASE = '/api/v1/webhooks/subscriptions';

/** Internal targets that must be refused when the guard is on (the URL forms WHATWG normalises included). */
const INTERNAL_URLS = [
  'http://127.0.0.1/hook',
  'https://127.0.0.1/hook',
  'https://2130706433/hook',
  'https://0x7f000001/hook',
  'https://127.1/hook',
  'https://0177.0.0.1/hook',
  'https://[::1]/hook',
  'https://[::ffff:127.0.0.1]/hook',
  'https://[::a00:1]/hook',
  'https://[::ffff:7f00:1]/hook',
  'https://169.254.169.254/latest/meta-data',
  'https://100.64.0.1/hook',
  'https://10.0.0.1/hook',
  'https://172.16.0.1/hook',
  'https://172.31.255.254/hook',
  'https://192.168.1.1/hook',
  'https://[fd00::1]/hook',
  'https://[fe80::1]/hook',
  'https://0.0.0.0/hook',
  'https://255.255.255.255/hook',
  'https://224.0.0.1/hook',
  'https://localhost/hook',
  'https://api.localhost/hook',
  'https://intranet/hook',
  'http://example.com/hook',
];

/** A plain TCP server that only counts the connections it is offered. */
async function connectionCounter(): Promise<{ port: number; count: () => number; close: () => Promise<void> }> {
  let connections = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    count: () => connections,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function fakeResolver(table: Record<string, string[]>): Resolver {
  return (hostname, callback) => {
    const addresses = table[hostname];
    if (!addresses) {
      const err: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
      err.code = 'ENOTFOUND';
      return callback(err, []);
    }
    callback(
      null,
      addresses.map((address) => ({ address, family: net.isIPv6(address) ? 6 : 4 })),
    );
  };
}

function lookupOnce(resolve: Resolver, hostname: string, all: boolean): Promise<{ err: NodeJS.ErrnoException | null; result: unknown }> {
  const lookup = guardedLookup(resolve);
  return new Promise((done) => {
    lookup(hostname, { all } as dns.LookupOptions, (err: NodeJS.ErrnoException | null, address: unknown) => done({ err, result: address }));
  });
}

describe('SSRF guard: subscription URLs (guard on)', () => {
  let app: FastifyInstance;
  let alice: TestUser;

  before(async () => {
    app = await buildTestApp(undefined, { webhookAllowPrivateTargets: false });
    alice = await createUser(app);
  });
  after(() => app.close());

  it('refuses internal, loopback, link-local, private, CGNAT, unspecified and non-https targets with 422', async () => {
    for (const url of INTERNAL_URLS) {
      const res = await api(app, alice, { method: 'POST', url: BASE, payload: { url, events: ['order.created'] } });
      assert.equal(res.statusCode, 422, `${url} → ${res.statusCode} ${res.body}`);
      const body = errorBody(res);
      assert.equal(body.error_code, 'VALIDATION_ERROR');
      assert.deepEqual((body.errors as { loc: string[] }[])[0].loc, ['body', 'url']);
    }
    const rows = await app.ctx.db.selectFrom('webhook_subscriptions').select('id').execute();
    assert.equal(rows.length, 0);
  });

  it('accepts an https URL on a public name or address, and PATCH is checked the same way', async () => {
    const res = await api(app, alice, { method: 'POST', url: BASE, payload: { url: 'https://hooks.example.com/in', events: ['order.created'] } });
    assert.equal(res.statusCode, 201, res.body);
    const ip = await api(app, alice, { method: 'POST', url: BASE, payload: { url: 'https://93.184.216.34:8443/in', events: ['order.created'] } });
    assert.equal(ip.statusCode, 201, ip.body);
    const id = res.json<{ id: number }>().id;
    for (const url of ['https://169.254.169.254/', 'https://[::1]/', 'http://hooks.example.com/in']) {
      const patch = await api(app, alice, { method: 'PATCH', url: `${BASE}/${id}`, payload: { url } });
      assert.equal(patch.statusCode, 422, url);
    }
    const row = await app.ctx.db.selectFrom('webhook_subscriptions').select('url').where('id', '=', id).executeTakeFirstOrThrow();
    assert.equal(row.url, 'https://hooks.example.com/in');
  });
});

describe('SSRF guard: address checks', () => {
  it('isPublicAddress accepts only public unicast, judging IPv4-mapped IPv6 by its IPv4 and refusing IPv6 forms that embed one', () => {
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:93.184.216.34']) assert.equal(isPublicAddress(a), true, a);
    for (const a of ['127.0.0.1', '::1', '10.1.2.3', '172.16.5.4', '192.168.0.1', '169.254.169.254', '0.0.0.0', '::', '100.64.0.1', 'fd00::1', 'fe80::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '::127.0.0.1', '::a00:1', '::7f00:1', '64:ff9b::7f00:1', '2002:7f00:1::1', '2001:db8::1', '224.0.0.1', 'ff02::1', '255.255.255.255', '240.0.0.1', 'not-an-ip']) {
      assert.equal(isPublicAddress(a), false, a);
    }
  });

  it('targetUrlProblem lifts every restriction but the scheme when private targets are allowed', () => {
    assert.equal(targetUrlProblem('http://127.0.0.1:9000/x', true), undefined);
    assert.ok(targetUrlProblem('ftp://127.0.0.1/x', true));
    for (const url of INTERNAL_URLS) assert.ok(targetUrlProblem(url, false), url);
  });

  it('the connect-time lookup refuses names that resolve to non-public addresses', async () => {
    const resolve = fakeResolver({
      'loopback.example.test': ['127.0.0.1'],
      'loopback6.example.test': ['::1'],
      'ten.example.test': ['10.0.0.5'],
      'oneseventwo.example.test': ['172.16.0.10'],
      'home.example.test': ['192.168.1.20'],
      'metadata.example.test': ['169.254.169.254'],
      'zero.example.test': ['0.0.0.0'],
      'mapped.example.test': ['::ffff:127.0.0.1'],
      'ula.example.test': ['fd12:3456::1'],
      'mixed.example.test': ['93.184.216.34', '127.0.0.1'],
      'public.example.test': ['93.184.216.34'],
    });
    for (const host of ['loopback', 'loopback6', 'ten', 'oneseventwo', 'home', 'metadata', 'zero', 'mapped', 'ula', 'mixed']) {
      for (const all of [false, true]) {
        const { err } = await lookupOnce(resolve, `${host}.example.test`, all);
        assert.ok(err, `${host} (all=${all}) must be refused`);
        assert.equal(err.code, 'EUNSAFETARGET');
      }
    }
    const single = await lookupOnce(resolve, 'public.example.test', false);
    assert.equal(single.err, null);
    assert.equal(single.result, '93.184.216.34');
    const all = await lookupOnce(resolve, 'public.example.test', true);
    assert.deepEqual(all.result, [{ address: '93.184.216.34', family: 4 }]);
    const missing = await lookupOnce(resolve, 'nowhere.example.test', false);
    assert.equal(missing.err?.code, 'ENOTFOUND');
  });

  it('a name resolving to 127.0.0.1 at delivery time is never connected to (DNS rebinding)', async () => {
    const counter = await connectionCounter();
    const agent = await createDeliveryAgent({
      allowPrivate: false,
      timeoutMs: 5000,
      resolve: fakeResolver({ 'rebind.example.test': ['127.0.0.1'] }),
    });
    try {
      const result = await sendSignedMessage(
        agent,
        { url: `https://rebind.example.test:${counter.port}/hook`, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', messageId: 'msg_1', body: '{}' },
        { allowPrivate: false },
      );
      assert.equal(result.success, false);
      assert.equal(result.statusCode, null);
      // the subscriber reads a generic reason; the resolved address is for the service log only
      assert.equal(result.error, 'target address not allowed');
      assert.match(result.detail ?? '', /non-public address \(127\.0\.0\.1\)/);
      assert.equal(counter.count(), 0);
    } finally {
      await agent.close();
      await counter.close();
    }
  });

  it('an IP-literal internal URL stored earlier is refused again at delivery, before any connection', async () => {
    const counter = await connectionCounter();
    const agent = await createDeliveryAgent({ allowPrivate: false, timeoutMs: 5000 });
    try {
      for (const url of [`http://127.0.0.1:${counter.port}/hook`, `https://127.0.0.1:${counter.port}/hook`, `https://[::ffff:127.0.0.1]:${counter.port}/hook`]) {
        const result = await sendSignedMessage(agent, { url, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', messageId: 'msg_2', body: '{}' }, { allowPrivate: false });
        assert.equal(result.success, false, url);
        assert.equal(result.error, 'target address not allowed', url);
        assert.match(result.detail ?? '', /url must/);
      }
      assert.equal(counter.count(), 0);
    } finally {
      await agent.close();
      await counter.close();
    }
  });
});
