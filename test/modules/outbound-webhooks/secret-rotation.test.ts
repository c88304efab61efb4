import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, errorBody, waitFor, type TestUser } from '../../helpers/app.ts';
import { BASE, gate, sendTestEvent, startSlowReceiver, subscribe, verifies, type SlowReceiver } from './outbound-webhooks.helpers.ts';

interface Rotated {
  secret: string;
  previous_secret_expires_at: string | null;
}

/**
 * Rotation with overlap: while it lasts, every delivery (retries of earlier messages included)
 * carries `v1,<new> v1,<previous>`, so a receiver holding either secret verifies it with the
 * standardwebhooks package; afterwards only the new one.
 */
describe('outgoing webhooks: secret rotation with overlap', () => {
  let app: FastifyInstance;
  let user: TestUser;
  let r: SlowReceiver;

  const rotate = (subscriptionId: number, payload?: Record<string, unknown> | unknown[]) =>
    api(app, user, { method: 'POST', url: `${BASE}/${subscriptionId}/rotate-secret`, ...(payload === undefined ? {} : { payload }) });
  const hitsOf = (messageId: string) => r.hits.filter((h) => h.id === messageId);
  const signatures = (hit: { headers: Record<string, unknown> }) => String(hit.headers['webhook-signature']).split(' ');

  before(async () => {
    app = await buildTestApp(undefined, { webhookRetrySchedule: [0.2] });
    user = await createUser(app);
    r = await startSlowReceiver();
  });
  after(async () => {
    await app.close();
    await r.close();
  });

  it('during the overlap a receiver holding only the old or only the new secret verifies every delivery, retries included', async () => {
    const sub = await subscribe(app, user, r.url);
    // the first attempt of a message sent before the rotation fails after the rotation
    const rotated = gate();
    r.respond = async (_hit, i) => {
      if (i > 0) return { status: 200 };
      await rotated.opened;
      return { status: 500 };
    };
    const before = await sendTestEvent(app, user, sub.id);
    await waitFor(async () => (r.hits.length === 1 ? true : undefined));
    const res = await rotate(sub.id, { overlap_seconds: 3600 });
    assert.equal(res.statusCode, 200, res.body);
    const { secret: fresh, previous_secret_expires_at: until } = res.json<Rotated>();
    assert.notEqual(fresh, sub.secret);
    const expected = Date.now() + 3600 * 1000;
    assert.ok(until && Math.abs(Date.parse(until) - expected) < 60000, `overlap ends in an hour: ${until}`);
    rotated.open();

    const [attempt1, retry] = await waitFor(async () => (hitsOf(before).length === 2 ? hitsOf(before) : undefined));
    assert.ok(verifies(sub.secret, attempt1) && !verifies(fresh, attempt1), 'the attempt before the rotation: old secret only');
    assert.equal(signatures(attempt1).length, 1);
    assert.ok(verifies(sub.secret, retry), 'the retry verifies with the old secret');
    assert.ok(verifies(fresh, retry), 'the retry verifies with the new secret');
    assert.deepEqual(signatures(retry).map((s) => s.slice(0, 3)), ['v1,', 'v1,'], 'two space-separated entries');

    const during = await sendTestEvent(app, user, sub.id);
    const [hit] = await waitFor(async () => (hitsOf(during).length === 1 ? hitsOf(during) : undefined));
    assert.ok(verifies(sub.secret, hit) && verifies(fresh, hit), 'a new message verifies with either secret');
    const read = await api(app, user, { method: 'GET', url: `${BASE}/${sub.id}` });
    assert.equal(read.json<Rotated>().previous_secret_expires_at, until, 'the read shows when the overlap ends');
    assert.equal(read.json<Rotated>().secret, undefined);
  });

  it('after the overlap only the new secret verifies; rotating again ends an earlier overlap', async () => {
    r.respond = () => ({ status: 200 });
    const sub = await subscribe(app, user, `${r.url}/after`);
    const first = (await rotate(sub.id, { overlap_seconds: 1 })).json<Rotated>();
    // the overlap ends a second later: the read says so once it has
    await waitFor(async () => {
      const read = await api(app, user, { method: 'GET', url: `${BASE}/${sub.id}` });
      return read.json<Rotated>().previous_secret_expires_at === null ? true : undefined;
    }, 10000);
    const late = await sendTestEvent(app, user, sub.id);
    const [hit] = await waitFor(async () => (hitsOf(late).length === 1 ? hitsOf(late) : undefined));
    assert.ok(verifies(first.secret, hit), 'the new secret verifies');
    assert.ok(!verifies(sub.secret, hit), 'the old secret no longer does');
    assert.equal(signatures(hit).length, 1);

    // two rotations in a row: only the secret just replaced overlaps
    const second = (await rotate(sub.id)).json<Rotated>();
    const third = (await rotate(sub.id)).json<Rotated>();
    const msg = await sendTestEvent(app, user, sub.id);
    const [h] = await waitFor(async () => (hitsOf(msg).length === 1 ? hitsOf(msg) : undefined));
    assert.ok(verifies(third.secret, h) && verifies(second.secret, h));
    assert.ok(!verifies(first.secret, h));
    assert.equal(signatures(h).length, 2);
  });

  it('overlap_seconds is optional (24 h), 0 means none, and bounded', async () => {
    const sub = await subscribe(app, user, `${r.url}/bounds`);
    const plain = await rotate(sub.id);
    assert.equal(plain.statusCode, 200);
    const until = Date.parse(plain.json<Rotated>().previous_secret_expires_at ?? '');
    assert.ok(Math.abs(until - (Date.now() + 86400 * 1000)) < 60000, 'the default overlap is 24 h');
    const empty = await rotate(sub.id, {});
    assert.ok(empty.json<Rotated>().previous_secret_expires_at);
    const none = await rotate(sub.id, { overlap_seconds: 0 });
    assert.equal(none.json<Rotated>().previous_secret_expires_at, null);
    const week = await rotate(sub.id, { overlap_seconds: 604800 });
    assert.equal(week.statusCode, 200);
    for (const payload of [{ overlap_seconds: -1 }, { overlap_seconds: 604801 }, { overlap_seconds: 1.5 }, { overlap_seconds: '60' }, { overlap: 60 }, []]) {
      const res = await rotate(sub.id, payload);
      assert.equal(res.statusCode, 422, JSON.stringify(payload));
      assert.equal(errorBody(res).error_code, 'VALIDATION_ERROR');
    }
    const row = await app.ctx.db.selectFrom('webhook_subscriptions').select('secret').where('id', '=', sub.id).executeTakeFirstOrThrow();
    assert.equal(row.secret, week.json<Rotated>().secret, 'a refused rotation changes nothing');
  });
});
