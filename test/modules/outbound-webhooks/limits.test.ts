import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, errorBody, waitFor, type TestUser } from '../../helpers/app.ts';
import { BASE, gate, sendTestEvent, startSlowReceiver, subscribe, type SlowReceiver } from './outbound-webhooks.helpers.ts';

const MAX_SUBSCRIPTIONS = 3;
const MAX_PER_HOST = 2;

/**
 * What keeps one user from amplifying traffic: a cap on subscriptions per user, one subscription
 * per URL, and a cap on deliveries in flight to one destination per worker process.
 */
describe('outgoing webhooks: limits', () => {
  let app: FastifyInstance;
  const receivers: SlowReceiver[] = [];

  const create = (who: TestUser, url: string) => api(app, who, { method: 'POST', url: BASE, payload: { url, events: ['order.created'] } });
  const liveCount = async (who: TestUser) =>
    (await app.ctx.db.selectFrom('webhook_subscriptions').select('id').where('user_id', '=', who.user.id).where('deleted_at', 'is', null).execute()).length;

  before(async () => {
    app = await buildTestApp(undefined, { webhookMaxSubscriptionsPerUser: MAX_SUBSCRIPTIONS, webhookMaxConcurrencyPerHost: MAX_PER_HOST });
  });
  after(async () => {
    await app.close();
    for (const r of receivers) await r.close();
  });

  it('a user has at most the configured number of subscriptions, disabled ones included', async () => {
    const user = await createUser(app);
    const ids: number[] = [];
    for (let i = 0; i < MAX_SUBSCRIPTIONS; i++) ids.push((await create(user, `https://hooks.example.com/limit/${i}`)).json<{ id: number }>().id);
    await api(app, user, { method: 'PATCH', url: `${BASE}/${ids[0]}`, payload: { is_active: false } });
    const refused = await create(user, 'https://hooks.example.com/limit/extra');
    assert.equal(refused.statusCode, 400, refused.body);
    assert.deepEqual(errorBody(refused), {
      detail: `A user may have at most ${MAX_SUBSCRIPTIONS} webhook subscriptions; delete one you no longer use`,
      error_code: 'SUBSCRIPTION_LIMIT_REACHED',
    });
    assert.equal(await liveCount(user), MAX_SUBSCRIPTIONS);
    // another user is not affected; a deleted subscription frees its place
    assert.equal((await create(await createUser(app), 'https://hooks.example.com/limit/extra')).statusCode, 201);
    assert.equal((await api(app, user, { method: 'DELETE', url: `${BASE}/${ids[1]}` })).statusCode, 204);
    assert.equal((await create(user, 'https://hooks.example.com/limit/extra')).statusCode, 201);
  });

  it('concurrent creations cannot pass the limit or the duplicate check together', async () => {
    const user = await createUser(app);
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => create(user, `https://hooks.example.com/race/${i}`)));
    const statuses = results.map((r) => r.statusCode).sort();
    assert.deepEqual(statuses, [...Array(MAX_SUBSCRIPTIONS).fill(201), ...Array(8 - MAX_SUBSCRIPTIONS).fill(400)]);
    assert.ok(results.filter((r) => r.statusCode === 400).every((r) => errorBody(r).error_code === 'SUBSCRIPTION_LIMIT_REACHED'));
    assert.equal(await liveCount(user), MAX_SUBSCRIPTIONS);

    const other = await createUser(app);
    const same = await Promise.all(Array.from({ length: 5 }, () => create(other, 'https://hooks.example.com/same')));
    assert.deepEqual(same.map((r) => r.statusCode).sort(), [201, 400, 400, 400, 400]);
    assert.equal(await liveCount(other), 1);
  });

  it('the same URL as another of the user\'s subscriptions is refused, compared after normalisation', async () => {
    const user = await createUser(app);
    const first = await create(user, 'https://hooks.example.com/orders?tenant=7');
    assert.equal(first.statusCode, 201);
    const firstId = first.json<{ id: number }>().id;
    for (const url of [
      'https://hooks.example.com/orders?tenant=7',
      'HTTPS://Hooks.EXAMPLE.com:443/orders?tenant=7',
      'https://hooks.example.com./orders?tenant=7',
      'https://hooks.example.com/orders?tenant=7#section',
      'https://hooks.example.com/./orders?tenant=7',
    ]) {
      const res = await create(user, url);
      assert.equal(res.statusCode, 400, `${url}: ${res.body}`);
      assert.deepEqual(errorBody(res), { detail: `You already have a subscription to this URL (subscription ${firstId})`, error_code: 'SUBSCRIPTION_URL_EXISTS' });
    }
    // a different query or path is another URL; another user may use the same one
    const second = await create(user, 'https://hooks.example.com/orders?tenant=8');
    assert.equal(second.statusCode, 201);
    assert.equal((await create(await createUser(app), 'https://hooks.example.com/orders?tenant=7')).statusCode, 201);

    // PATCH: onto another subscription's URL is refused; its own URL (in another spelling) is not
    const secondId = second.json<{ id: number }>().id;
    const clash = await api(app, user, { method: 'PATCH', url: `${BASE}/${secondId}`, payload: { url: 'https://HOOKS.example.com/orders?tenant=7' } });
    assert.equal(clash.statusCode, 400);
    assert.equal(errorBody(clash).error_code, 'SUBSCRIPTION_URL_EXISTS');
    const self = await api(app, user, { method: 'PATCH', url: `${BASE}/${secondId}`, payload: { url: 'https://hooks.example.com:443/orders?tenant=8' } });
    assert.equal(self.statusCode, 200, self.body);
    // a deleted subscription's URL is free again
    await api(app, user, { method: 'DELETE', url: `${BASE}/${firstId}` });
    assert.equal((await create(user, 'https://hooks.example.com/orders?tenant=7')).statusCode, 201);
  });

  it('deliveries to one host stay within the per-host limit while another host\'s proceed', async () => {
    const user = await createUser(app);
    const busy = await startSlowReceiver();
    const other = await startSlowReceiver();
    receivers.push(busy, other);
    // the busy host answers only once the other host has had its deliveries
    const otherServed = gate();
    busy.respond = async () => {
      await Promise.race([otherServed.opened, new Promise((resolve) => setTimeout(resolve, 8000))]);
      return { status: 200 };
    };
    // what the busy host had received when the other host's second delivery arrived: read there,
    // since the busy host's answers (and so its next deliveries) follow at once
    let busyHitsWhenOtherServed = -1;
    other.respond = (_hit, i) => {
      if (i === 1) {
        busyHitsWhenOtherServed = busy.hits.length;
        otherServed.open();
      }
      return { status: 200 };
    };
    const busySub = await subscribe(app, user, busy.url);
    const otherSub = await subscribe(app, user, other.url);
    for (let i = 0; i < 6; i++) await sendTestEvent(app, user, busySub.id);
    await waitFor(async () => (busy.hits.length >= MAX_PER_HOST ? true : undefined));
    await sendTestEvent(app, user, otherSub.id);
    await sendTestEvent(app, user, otherSub.id);
    await waitFor(async () => (other.hits.length === 2 ? true : undefined));
    assert.ok(
      busyHitsWhenOtherServed >= 0 && busyHitsWhenOtherServed <= MAX_PER_HOST,
      `the busy host had ${busyHitsWhenOtherServed} requests before the other host was served`,
    );
    await waitFor(async () => (busy.hits.length === 6 && busy.inFlight === 0 ? true : undefined), 20000);
    assert.equal(busy.maxInFlight, MAX_PER_HOST, `at most ${MAX_PER_HOST} in flight to one host (saw ${busy.maxInFlight})`);
  });
});
