import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Deployment } from './helpers/deployment.ts';
import { adminLogin, call, Stats, type Result } from './helpers/http.ts';
import { pollInThread } from './helpers/poller.ts';
import { printTable, round } from './helpers/report.ts';
import type { ServiceProcess } from './helpers/service.ts';

/**
 * Scenario — hostile bodies: waves of 10 concurrent 1 MiB bodies nested 512 Ki levels deep, half
 * anonymous (sign-in, the platform webhook without a signature) and half with a user's token (items,
 * orders), sent for RELIABILITY_NESTED_SECONDS (default 20) while `GET /health` is polled every
 * 25 ms from a thread of its own (so the figures are the service's, not this process's, which is
 * busy sending the bodies). Every hostile body is refused with a 4xx in the error shape (or, for
 * a few, the connection closes before the client has read the refusal); /health's p99 stays under
 * 100 ms.
 */
const SECONDS = Number(process.env.RELIABILITY_NESTED_SECONDS ?? 20);
const CONCURRENT = 10;
const MiB = 1024 * 1024;

/** Exactly 1 MiB: `{"<field>":[[[…]]],…}` padded with nesting; built once, sent many times. */
function nestedBody(field: string, rest: string): Buffer {
  const shell = `{"${field}":,${rest}}`;
  const depth = Math.floor((MiB - shell.length) / 2);
  return Buffer.from(`{"${field}":${'['.repeat(depth)}${']'.repeat(depth)},${rest}}`);
}

describe('reliability: deeply nested 1 MiB bodies do not hold the event loop', () => {
  let d: Deployment;
  let api: ServiceProcess;

  before(async () => {
    d = await Deployment.create({ redis: false });
    [api] = await d.start(d.options('all', {}, 'api'));
  });

  after(async () => {
    await d?.destroy();
  });

  it(`${CONCURRENT} concurrent hostile bodies, anonymous and authenticated: /health p99 < 100 ms`, async () => {
    const base = api.baseUrl;
    const token = (await adminLogin(base)).access;
    const json = { 'content-type': 'application/json' };
    const bodies = {
      login: nestedBody('username', '"password":"x"'),
      webhook: nestedBody('line_items', '"id":1'),
      items: nestedBody('name', '"price":1'),
      orders: nestedBody('items', '"shipping_address":"x"'),
      user: nestedBody('full_name', '"is_active":true'),
    };
    const hostile: { name: string; send: () => Promise<Result> }[] = [
      { name: 'login', send: () => call(base, 'POST', '/api/v1/auth/login', { raw: bodies.login, headers: json }) },
      { name: 'webhook', send: () => call(base, 'POST', '/api/v1/webhooks/orders/create', { raw: bodies.webhook, headers: { ...json, 'x-shopify-hmac-sha256': 'AAAA' } }) },
      { name: 'items', send: () => call(base, 'POST', '/api/v1/items', { token, raw: bodies.items, headers: json }) },
      { name: 'orders', send: () => call(base, 'POST', '/api/v1/orders', { token, raw: bodies.orders, headers: json }) },
      { name: 'user patch', send: () => call(base, 'PATCH', '/api/v1/users/1', { token, raw: bodies.user, headers: json }) },
    ];

    // the same polling with no attack: what this host gives /health anyway
    const quiet = pollInThread(base, '/health', 25);
    await new Promise((r) => setTimeout(r, 5000));
    const baseline = await quiet.stop();

    /** the service's own event-loop delay (prom-client's figures, reset by each scrape) */
    const loopLag = async () => {
      const text = String((await call(base, 'GET', '/metrics')).body);
      const figure = (name: string) => round(Number(/^nodejs_eventloop_lag_(\w+)_seconds (\S+)$/m.exec(text.split('\n').filter((l) => l.startsWith(`nodejs_eventloop_lag_${name}_seconds `)).join('\n'))?.[2] ?? NaN) * 1000, 1);
      return `p99 ${figure('p99')} / max ${figure('max')}`;
    };
    const lagBefore = await loopLag();
    const attacks = new Map(hostile.map((h) => [h.name, new Stats()]));
    const wrongShape: string[] = [];
    let closedEarly = 0;
    const deadline = Date.now() + SECONDS * 1000;
    const poll = pollInThread(base, '/health', 25);
    const lanes = Array.from({ length: CONCURRENT }, async (_, lane) => {
      for (let i = lane; Date.now() < deadline; i += CONCURRENT) {
        const h = hostile[i % hostile.length];
        const r = await h.send();
        attacks.get(h.name)!.add(r);
        // A body over the route's limit is refused from its Content-Length, and the connection is
        // closed rather than the rest read (Node's choice for an unread body): a client still
        // writing then sees EPIPE or a reset before it reads the 413, as curl and browsers may too.
        if (r.status === 0 && (r.error === 'EPIPE' || r.error === 'ECONNRESET')) {
          closedEarly++;
          continue;
        }
        const body = r.body as { detail?: unknown; error_code?: unknown } | undefined;
        if (r.status < 400 || r.status >= 500 || typeof body?.detail !== 'string' || typeof body.error_code !== 'string') {
          wrongShape.push(`${h.name}: ${r.status} ${r.error ?? JSON.stringify(r.body).slice(0, 120)}`);
        }
      }
    });
    await Promise.all(lanes);
    const health = await poll.stop();
    const lagDuring = await loopLag();

    const figures: [string, string | number][] = [
      ['health without attack: requests / p50 / p99 ms', `${baseline.count} / ${round(baseline.percentile(50), 1)} / ${round(baseline.percentile(99), 1)}`],
      ['service event-loop delay ms, before / during', `${lagBefore} / ${lagDuring}`],
      ['health requests', health.count],
      ['health p50 ms', round(health.percentile(50), 1)],
      ['health p99 ms', round(health.percentile(99), 1)],
      ['health max ms', round(health.max(), 1)],
    ];
    for (const [name, s] of attacks) figures.push([`${name}: sent / statuses / p50 ms`, `${s.count} / ${s.statuses()} / ${round(s.percentile(50), 1)}`]);
    printTable('nested bodies', figures);

    assert.deepEqual(wrongShape.slice(0, 5), [], 'every hostile body is a 4xx in the error shape');
    const sent = [...attacks.values()].reduce((n, s) => n + s.count, 0);
    // the refusals are read, but for the few that race the closing connection
    assert.ok(closedEarly <= sent * 0.05, `${closedEarly} of ${sent} connections closed before their refusal was read`);
    assert.equal(health.count5xx() + health.countNet(), 0, `health: ${health.statuses()}`);
    assert.ok(health.count > SECONDS * 10, `health was polled (${health.count})`);
    assert.ok(health.percentile(99) < 100, `health p99 ${round(health.percentile(99), 1)} ms`);
  });
});
