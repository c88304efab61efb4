import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, errorBody, TEST_PASSWORD, waitFor, type TestUser } from '../../helpers/app.ts';
import { fixturePayload, seedProduct, sendInbound, SHOPIFY_SECRET } from '../../helpers/webhooks.ts';
import { parseMessage, startSmtpServer, type TestSmtpServer } from '../../mail/smtp-server.ts';
import { login, me, refresh, requestRecovery, resetPassword, tokenIn } from '../auth/auth.helpers.ts';

const fresh = (name: string) => `${name}-${crypto.randomBytes(3).toString('hex')}@example.com`;

describe('verified e-mail, and e-mail changes that can be undone (SMTP)', () => {
  let smtp: TestSmtpServer;
  let app: FastifyInstance;
  let admin: TestUser;

  const patch = (version: 'v1' | 'v2', who: TestUser, id: number, payload: object) => api(app, who, { method: 'PATCH', url: `/api/${version}/users/${id}`, payload });
  /** The `n`th e-mail to `email` (0 first) with `subject`: its body. */
  const mailTo = async (email: string, subject: string, n = 0) => {
    const found = await waitFor(async () => smtp.messages.filter((m) => m.to.includes(email) && parseMessage(m.raw).headers.subject === subject)[n]);
    return parseMessage(found.raw).body;
  };
  const post = (url: string, token: string) => app.inject({ method: 'POST', url, payload: { token } });
  const userRow = (id: number) => app.ctx.db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  /** A platform order for `email`; resolves to the id of the user it was attached to. */
  const platformOrderFor = async (email: string) => {
    const id = 9200000000000 + crypto.randomInt(1e9);
    const payload = { ...fixturePayload(), id, email, customer: { email, first_name: 'Real', last_name: 'Shopper' } };
    assert.equal((await sendInbound(app, JSON.stringify(payload))).statusCode, 200);
    const order = await waitFor(async () => app.ctx.db.selectFrom('orders').select('user_id').where('external_id', '=', String(id)).executeTakeFirst());
    return order.user_id;
  };

  before(async () => {
    smtp = await startSmtpServer(undefined);
    app = await buildTestApp(undefined, { smtpUrl: smtp.url, shopifyWebhookSecret: SHOPIFY_SECRET });
    admin = await createUser(app, { admin: true });
    await seedProduct(app, 'MUG-CERAMIC-350', { stock: 1000 });
    await seedProduct(app, 'TEA-EARLGREY-100', { stock: 1000 });
  });
  after(() => smtp.close());

  it("finding 1: a user who gives themselves a shopper's address does not get the shopper's platform orders", async () => {
    const attacker = await createUser(app);
    const shopper = fresh('shopper');
    const changed = await patch('v1', attacker, attacker.user.id, { email: shopper });
    assert.equal(changed.statusCode, 200, changed.body);
    assert.equal(changed.json().email, shopper);
    assert.equal('email_verified' in changed.json(), false, 'v1 keeps the specification body');
    const read = await api(app, attacker, { method: 'GET', url: `/api/v2/users/${attacker.user.id}` });
    assert.equal(read.json().email_verified, false);

    const owner = await platformOrderFor(shopper);
    assert.notEqual(owner, attacker.user.id, 'the order is not the attacker’s');
    const customer = await userRow(owner);
    assert.equal(customer.email.toLowerCase(), shopper);
    assert.equal(customer.password_hash, null, 'a platform customer of its own');
    const mine = await api(app, attacker, { method: 'GET', url: '/api/v1/orders' });
    assert.equal(mine.json().total, 0);
    // a second order for the address goes to the same platform customer
    assert.equal(await platformOrderFor(shopper), owner);
    // password recovery mails the platform customer (its first password), never the unverified claim
    assert.equal((await requestRecovery(app, shopper)).statusCode, 202);
    const body = await mailTo(shopper, 'Choose a password for your account');
    assert.match(body, /Hello Real Shopper/);
  });

  it('concurrent platform orders for a new address make one platform customer', async () => {
    const shopper = fresh('together');
    const owners = await Promise.all([platformOrderFor(shopper), platformOrderFor(shopper), platformOrderFor(shopper)]);
    assert.equal(new Set(owners).size, 1, `owners ${owners.join(', ')}`);
    const rows = await app.ctx.db.selectFrom('users').select('id').where('email', '=', shopper).execute();
    assert.equal(rows.length, 1);
  });

  it('a verified account gets its platform orders', async () => {
    const holder = await createUser(app);
    assert.equal(await platformOrderFor(holder.email), holder.user.id);
  });

  it('the confirmation link verifies the new address; then its platform orders are linked; a link works once', async () => {
    const user = await createUser(app);
    const next = fresh('confirmed');
    assert.equal((await patch('v2', user, user.user.id, { email: next, current_password: TEST_PASSWORD })).json().email_verified, false);
    const token = tokenIn(await mailTo(next, 'Confirm the e-mail address of your account'));
    const res = await post('/api/v1/auth/verify-email', token);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { status: 'completed', message: 'The e-mail address is verified' });
    assert.equal((await userRow(user.user.id)).email_verified, true);
    const v2me = await api(app, user, { method: 'GET', url: '/api/v2/auth/me' });
    assert.equal(v2me.json().email_verified, true);
    const v1me = await me(app, user.token);
    assert.deepEqual(Object.keys(v1me.json()).sort(), ['created_at', 'email', 'full_name', 'id', 'is_active', 'is_admin']);
    assert.equal(errorBody(await post('/api/v1/auth/verify-email', token)).error_code, 'EMAIL_TOKEN_USED');
    assert.equal(await platformOrderFor(next), user.user.id);
  });

  it('a confirmation link is void once the address changed again; unknown and malformed tokens are 400, a missing one 422', async () => {
    const user = await createUser(app);
    const first = fresh('first');
    await patch('v1', user, user.user.id, { email: first });
    const token = tokenIn(await mailTo(first, 'Confirm the e-mail address of your account'));
    await patch('v1', user, user.user.id, { email: fresh('second') });
    const res = await post('/api/v1/auth/verify-email', token);
    assert.equal(res.statusCode, 400);
    assert.equal(errorBody(res).error_code, 'INVALID_EMAIL_TOKEN');
    assert.equal((await userRow(user.user.id)).email_verified, false);
    assert.equal(errorBody(await post('/api/v1/auth/verify-email', crypto.randomBytes(32).toString('base64url'))).error_code, 'INVALID_EMAIL_TOKEN');
    assert.equal(errorBody(await post('/api/v1/auth/email-change/revert', 'not-a-token')).error_code, 'INVALID_EMAIL_TOKEN');
    const missing = await app.inject({ method: 'POST', url: '/api/v1/auth/verify-email', payload: {} });
    assert.equal(missing.statusCode, 422);
  });

  it('finding 2: a stolen access token moves the account; the revert link restores the address, verified, and ends every session', async () => {
    const victim = await createUser(app);
    const second = await login(app, victim.email, TEST_PASSWORD);
    const attackerAddress = fresh('attacker');
    // v1 keeps the specification's body: no password needed there
    assert.equal((await patch('v1', victim, victim.user.id, { email: attackerAddress })).statusCode, 200);
    // recovery does not mail the attacker's unverified address
    assert.equal((await requestRecovery(app, attackerAddress)).statusCode, 202);

    const notice = await mailTo(victim.email, 'The e-mail address of your account was changed');
    assert.match(notice, /valid for 7 days/);
    const token = tokenIn(notice);
    const res = await post('/api/v1/auth/email-change/revert', token);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { status: 'completed', message: 'The previous e-mail address is restored and every session of the account has ended' });
    const row = await userRow(victim.user.id);
    assert.equal(row.email, victim.email);
    assert.equal(row.email_verified, true);
    assert.equal((await me(app, victim.token)).statusCode, 401, 'the stolen access token is refused');
    assert.equal((await refresh(app, second.json().refresh_token)).statusCode, 401, 'refresh tokens revoked');
    assert.equal(errorBody(await post('/api/v1/auth/email-change/revert', token)).error_code, 'EMAIL_TOKEN_USED');
    // the password ended with the revert; the holder gets back in through the reset link the notice brings to the restored address
    assert.equal((await login(app, victim.email, TEST_PASSWORD)).statusCode, 401);
    const restored = await mailTo(victim.email, 'Your e-mail address is restored: choose a new password');
    assert.equal((await resetPassword(app, tokenIn(restored), 'back-in-control-1')).statusCode, 200);
    assert.equal((await login(app, victim.email, 'back-in-control-1')).statusCode, 200);
    await mailTo(attackerAddress, 'An e-mail change of your account was undone');
    assert.equal((await requestRecovery(app, attackerAddress)).statusCode, 202);
    assert.equal(smtp.messages.filter((m) => m.to.includes(attackerAddress) && parseMessage(m.raw).headers.subject === 'Reset your password').length, 0);
  });

  it('a revert link expires after 7 days (400 EMAIL_TOKEN_EXPIRED) and changes nothing', async () => {
    const user = await createUser(app);
    const moved = fresh('moved');
    await patch('v1', user, user.user.id, { email: moved });
    const token = tokenIn(await mailTo(user.email, 'The e-mail address of your account was changed'));
    const stored = await app.ctx.db.selectFrom('email_tokens').selectAll().where('user_id', '=', user.user.id).where('purpose', '=', 'revert').executeTakeFirstOrThrow();
    const lifetime = stored.expires_at.getTime() - stored.created_at.getTime();
    assert.ok(Math.abs(lifetime - 7 * 86400 * 1000) < 60_000, `valid for 7 days, not ${lifetime} ms`);
    await app.ctx.db.updateTable('email_tokens').set({ expires_at: new Date(Date.now() - 1000) }).where('id', '=', stored.id).execute();
    const res = await post('/api/v1/auth/email-change/revert', token);
    assert.equal(res.statusCode, 400);
    assert.equal(errorBody(res).error_code, 'EMAIL_TOKEN_EXPIRED');
    assert.equal((await userRow(user.user.id)).email, moved);
  });

  it('a revert to an address another account verified meanwhile is 400 EMAIL_EXISTS, and changes nothing', async () => {
    const user = await createUser(app);
    const previous = user.email;
    await patch('v1', user, user.user.id, { email: fresh('elsewhere') });
    const token = tokenIn(await mailTo(previous, 'The e-mail address of your account was changed'));
    const taker = await createUser(app);
    assert.equal((await patch('v1', admin, taker.user.id, { email: previous })).statusCode, 200);
    const res = await post('/api/v1/auth/email-change/revert', token);
    assert.equal(res.statusCode, 400);
    assert.equal(errorBody(res).error_code, 'EMAIL_EXISTS');
    assert.equal((await me(app, user.token)).statusCode, 200, 'no session ended');
  });

  it('v2: changing your own e-mail needs current_password (422 without, 401 wrong); an administrator sets a verified address without it', async () => {
    const user = await createUser(app);
    const next = fresh('v2');
    const without = await patch('v2', user, user.user.id, { email: next });
    assert.equal(without.statusCode, 422);
    assert.deepEqual(errorBody(without).errors, [{ loc: ['body', 'current_password'], msg: 'required to change your own e-mail address', type: 'missing' }]);
    const wrong = await patch('v2', user, user.user.id, { email: next, current_password: 'not-the-password' });
    assert.equal(wrong.statusCode, 401);
    assert.equal(errorBody(wrong).error_code, 'INVALID_CREDENTIALS');
    assert.equal((await userRow(user.user.id)).email, user.email, 'nothing changed');
    // a rename alone needs no password; v1 does not know the field
    assert.equal((await patch('v2', user, user.user.id, { full_name: 'Renamed' })).statusCode, 200);
    assert.equal((await patch('v1', user, user.user.id, { email: next, current_password: TEST_PASSWORD })).statusCode, 422);
    const ok = await patch('v2', user, user.user.id, { email: next, current_password: TEST_PASSWORD });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal(ok.json().email_verified, false);

    const other = await createUser(app);
    const byAdmin = await patch('v2', admin, other.user.id, { email: fresh('by-admin') });
    assert.equal(byAdmin.statusCode, 200, byAdmin.body);
    assert.equal(byAdmin.json().email_verified, true);
    const list = await api(app, admin, { method: 'GET', url: '/api/v2/users?page_size=100' });
    assert.ok(list.json().items.every((u: { email_verified?: unknown }) => typeof u.email_verified === 'boolean'));
    const v1list = await api(app, admin, { method: 'GET', url: '/api/v1/users?page_size=100' });
    assert.ok(v1list.json().items.every((u: object) => !('email_verified' in u)));
  });

  it('an address held unverified cannot be taken by another account (400 EMAIL_EXISTS)', async () => {
    const a = await createUser(app);
    const b = await createUser(app);
    const claimed = fresh('claimed');
    await patch('v1', a, a.user.id, { email: claimed });
    const res = await patch('v1', b, b.user.id, { email: claimed });
    assert.equal(res.statusCode, 400);
    assert.equal(errorBody(res).error_code, 'EMAIL_EXISTS');
  });
});
