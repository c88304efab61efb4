import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { AsyncLocalStorage } from 'node:async_hooks';
import crypto from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { loadConfig } from '../../../src/config.ts';
import type { UserRow } from '../../../src/db/schema.ts';
import { resetMail } from '../../../src/modules/auth/password-recovery.service.ts';
import { api, createUser, errorBody, TEST_PASSWORD, twoApps, waitFor, type TestUser } from '../../helpers/app.ts';
import { parseMessage, startSmtpServer, type TestSmtpServer } from '../../mail/smtp-server.ts';
import { fixturePayload, seedProduct, sendInbound, SHOPIFY_SECRET } from '../../helpers/webhooks.ts';
import { login, me, refresh, requestRecovery, resetPassword, tokenIn } from './auth.helpers.ts';

const NEW_PASSWORD = 'a-new-password-after-reset';
const ACCEPTED = {
  status: 'accepted',
  message: 'If an account with this e-mail address exists, a password reset e-mail is on its way',
};

describe('password recovery by e-mail (SMTP)', () => {
  let smtp: TestSmtpServer;
  let a: FastifyInstance;
  let b: FastifyInstance;
  let admin: TestUser;

  /** The next recovery e-mail to `email` after the `seen` first ones: its parsed headers and body. */
  const nextMail = async (email: string, seen: number) => {
    const message = await waitFor(async () => smtp.messages.filter((m) => m.to.includes(email))[seen]);
    return parseMessage(message.raw);
  };
  const mailsTo = (email: string) => smtp.messages.filter((m) => m.to.includes(email)).length;
  /** Asks for recovery of `email` and returns the token from the e-mail it brings. */
  const recover = async (email: string) => {
    const seen = mailsTo(email);
    const res = await requestRecovery(a, email);
    assert.equal(res.statusCode, 202, res.body);
    return tokenIn((await nextMail(email, seen)).body);
  };
  const resetRows = (userId: number) =>
    a.ctx.db.selectFrom('password_reset_tokens').selectAll().where('user_id', '=', userId).orderBy('id').execute();

  before(async () => {
    smtp = await startSmtpServer(undefined);
    [a, b] = await twoApps(undefined, { smtpUrl: smtp.url, shopifyWebhookSecret: SHOPIFY_SECRET, passwordResetTtlSeconds: 1800 });
    admin = await createUser(a, { admin: true });
  });
  after(() => smtp.close());

  it('recovery → e-mail → reset → sign-in with the new password; the old access token is refused at once on another instance', async () => {
    const user = await createUser(a);
    const second = (await login(a, user.email, TEST_PASSWORD)).json<{ refresh_token: string }>();
    // both instances know the user (cached) before the reset
    assert.equal((await me(a, user.token)).statusCode, 200);
    assert.equal((await me(b, user.token)).statusCode, 200);

    const res = await requestRecovery(a, user.email);
    assert.equal(res.statusCode, 202);
    assert.deepEqual(res.json(), ACCEPTED);
    const { headers, body } = await nextMail(user.email, 0);
    assert.equal(headers.to, user.email);
    assert.equal(headers.subject, 'Reset your password');
    assert.match(body, /valid for 30 minutes and can be used once/);
    // without PASSWORD_RESET_URL the e-mail gives the token and the call to make
    assert.match(body, /POST \/api\/v1\/auth\/reset-password/);
    const token = tokenIn(body);
    assert.ok(Buffer.from(token, 'base64url').length >= 16, 'at least 128 random bits');
    assert.ok(body.includes(`{"token": "${token}", "new_password": `), body);

    // stored only as a hash, valid for the configured time
    const [row] = await resetRows(user.user.id);
    assert.equal(row.token_hash, crypto.createHash('sha256').update(token).digest('hex'));
    assert.ok(!JSON.stringify(row).includes(token), 'the token itself is not stored');
    assert.equal(Math.round((row.expires_at.getTime() - row.created_at.getTime()) / 1000), 1800);

    const reset = await resetPassword(a, token, NEW_PASSWORD);
    assert.equal(reset.statusCode, 200, reset.body);
    assert.deepEqual(reset.json(), { status: 'completed', message: 'Password has been reset; sign in with the new password' });

    // the old access token is refused on both instances; b learns of the change through the feed
    await b.ctx.userCache.settle();
    for (const app of [a, b]) {
      const old = await me(app, user.token);
      assert.equal(old.statusCode, 401, `old token on ${app === a ? 'a' : 'b'}`);
      assert.equal(errorBody(old).error_code, 'INVALID_TOKEN');
    }
    // every refresh token is revoked
    assert.equal((await refresh(a, user.refreshToken)).statusCode, 401);
    assert.equal((await refresh(b, second.refresh_token)).statusCode, 401);
    // the old password no longer works, the new one does, at once (in the same second as the reset)
    assert.equal((await login(b, user.email, TEST_PASSWORD)).statusCode, 401);
    const fresh = await login(b, user.email, NEW_PASSWORD);
    assert.equal(fresh.statusCode, 200, fresh.body);
    const { access_token, refresh_token } = fresh.json<{ access_token: string; refresh_token: string }>();
    assert.equal((await me(a, access_token)).statusCode, 200);
    assert.equal((await me(b, access_token)).statusCode, 200);
    assert.equal((await refresh(a, refresh_token)).statusCode, 200);
  });

  it('a token used twice is refused the second time (RESET_TOKEN_USED)', async () => {
    const user = await createUser(a);
    const token = await recover(user.email);
    assert.equal((await resetPassword(a, token, NEW_PASSWORD)).statusCode, 200);
    const again = await resetPassword(b, token, 'yet-another-password');
    assert.equal(again.statusCode, 400);
    assert.deepEqual(errorBody(again), { detail: 'This password reset token has already been used', error_code: 'RESET_TOKEN_USED' });
    assert.equal((await login(a, user.email, NEW_PASSWORD)).statusCode, 200, 'the first reset stands');
  });

  it('two resets with one token at the same moment: exactly one succeeds', async () => {
    const user = await createUser(a);
    const token = await recover(user.email);
    const results = await Promise.all([resetPassword(a, token, 'first-racing-password'), resetPassword(b, token, 'second-racing-password')]);
    assert.deepEqual(results.map((r) => r.statusCode).sort(), [200, 400]);
    const winner = results[0].statusCode === 200 ? 'first-racing-password' : 'second-racing-password';
    const loser = results.find((r) => r.statusCode === 400)!;
    assert.equal(errorBody(loser).error_code, 'RESET_TOKEN_USED');
    assert.equal((await login(a, user.email, winner)).statusCode, 200);
  });

  it('an expired token is refused (RESET_TOKEN_EXPIRED) and changes nothing', async () => {
    const user = await createUser(a);
    const token = await recover(user.email);
    // the token's validity ends (rather than the test waiting 30 minutes)
    await a.ctx.db.updateTable('password_reset_tokens').set({ expires_at: new Date(Date.now() - 1000) }).where('user_id', '=', user.user.id).execute();
    const res = await resetPassword(a, token, NEW_PASSWORD);
    assert.equal(res.statusCode, 400);
    assert.deepEqual(errorBody(res), { detail: 'This password reset token has expired; request a new one', error_code: 'RESET_TOKEN_EXPIRED' });
    assert.equal((await login(a, user.email, TEST_PASSWORD)).statusCode, 200, 'the password is unchanged');
    assert.equal((await me(a, user.token)).statusCode, 200, 'no session ended');
  });

  /** Waits until every recovery job so far has run (each decided whether to send an e-mail). */
  const recoveryJobsDone = () =>
    waitFor(async () => {
      const jobs = await a.ctx.queue.boss.findJobs('password-recovery-email');
      return jobs.every((j) => j.state === 'completed') ? true : undefined;
    });

  it('asking again while a token is valid sends nothing and never voids it (finding 3: recovery requests every few seconds)', async () => {
    const user = await createUser(a);
    const first = await recover(user.email);
    for (let i = 0; i < 5; i++) assert.equal((await requestRecovery(a, user.email)).statusCode, 202);
    await recoveryJobsDone();
    assert.equal(mailsTo(user.email), 1, 'one e-mail, however many requests');
    assert.equal((await resetRows(user.user.id)).length, 1, 'one token');
    assert.equal((await resetPassword(a, first, NEW_PASSWORD)).statusCode, 200, 'the first token still works');
    assert.equal((await login(a, user.email, NEW_PASSWORD)).statusCode, 200);
  });

  it('finding 3 replayed (its recovery half; the sign-in half is in login-throttle.security.test.ts): repeated recovery requests leave one working token', async () => {
    const victim = await createUser(a);
    const attacker = '203.0.113.44';
    for (let i = 0; i < 10; i++) await login(a, victim.email, `guess-${i}`, { remoteAddress: attacker });
    for (let i = 0; i < 8; i++) assert.equal((await requestRecovery(a, victim.email, { remoteAddress: attacker })).statusCode, 202);
    await recoveryJobsDone();
    assert.equal(mailsTo(victim.email), 1, 'one e-mail reached the inbox, not one per request');
    const token = tokenIn((await nextMail(victim.email, 0)).body);
    const reset = await a.inject({ method: 'POST', url: '/api/v1/auth/reset-password', payload: { token, new_password: NEW_PASSWORD }, remoteAddress: '198.51.100.7' });
    assert.equal(reset.statusCode, 200, reset.body);
    assert.equal((await login(a, victim.email, NEW_PASSWORD, { remoteAddress: '198.51.100.7' })).statusCode, 200);
  });

  it('at most 3 recovery e-mails reach one address per hour, even when each token is used', async () => {
    const user = await createUser(a);
    for (let i = 0; i < 3; i++) {
      const token = await recover(user.email);
      assert.equal((await resetPassword(a, token, `${NEW_PASSWORD}-${i}`)).statusCode, 200);
    }
    assert.equal((await requestRecovery(a, user.email)).statusCode, 202);
    await recoveryJobsDone();
    assert.equal(mailsTo(user.email), 3);
  });

  it('an account whose address is not verified gets no recovery e-mail', async () => {
    const user = await createUser(a);
    await a.ctx.db.updateTable('users').set({ email_verified: false }).where('id', '=', user.user.id).execute();
    const marker = await createUser(a);
    assert.equal((await requestRecovery(a, user.email)).statusCode, 202);
    assert.equal((await requestRecovery(a, marker.email)).statusCode, 202);
    await nextMail(marker.email, 0);
    await recoveryJobsDone();
    assert.equal(mailsTo(user.email), 0);
    assert.deepEqual(await resetRows(user.user.id), []);
  });

  it('a token is void once the password is changed, or the e-mail changes, after it was sent', async () => {
    const user = await createUser(a);
    const token = await recover(user.email);
    const change = await api(a, user, { method: 'POST', url: '/api/v1/auth/password', payload: { current_password: TEST_PASSWORD, new_password: NEW_PASSWORD } });
    assert.equal(change.statusCode, 204);
    assert.equal(errorBody(await resetPassword(a, token, 'an-attackers-password')).error_code, 'RESET_TOKEN_SUPERSEDED');

    const other = await createUser(a);
    const token2 = await recover(other.email);
    const moved = await api(a, admin, { method: 'PATCH', url: `/api/v1/users/${other.user.id}`, payload: { email: `moved-${other.email}` } });
    assert.equal(moved.statusCode, 200);
    assert.equal(errorBody(await resetPassword(a, token2, 'an-attackers-password')).error_code, 'RESET_TOKEN_SUPERSEDED');
    assert.equal((await login(a, `moved-${other.email}`, TEST_PASSWORD)).statusCode, 200);
  });

  it('a wrong or malformed token is 400 INVALID_RESET_TOKEN; the password rules are those of every password', async () => {
    for (const token of [crypto.randomBytes(32).toString('base64url'), 'not-a-token', '']) {
      const res = await resetPassword(a, token, NEW_PASSWORD);
      assert.equal(res.statusCode, 400, token);
      assert.deepEqual(errorBody(res), { detail: 'Invalid password reset token', error_code: 'INVALID_RESET_TOKEN' });
    }
    // a refused password does not use the token up
    const user = await createUser(a);
    const token = await recover(user.email);
    for (const bad of ['short', 'é'.repeat(37), 'x'.repeat(73)]) {
      const res = await resetPassword(a, token, bad);
      assert.equal(res.statusCode, 422, bad);
      assert.deepEqual((errorBody(res).errors?.[0] as { loc: unknown }).loc, ['body', 'new_password']);
    }
    for (const payload of [{ token }, { new_password: NEW_PASSWORD }, { token, new_password: NEW_PASSWORD, email: user.email }]) {
      const res = await a.inject({ method: 'POST', url: '/api/v1/auth/reset-password', payload });
      assert.equal(res.statusCode, 422);
    }
    assert.equal((await resetPassword(a, token, NEW_PASSWORD)).statusCode, 200);
  });

  it('a malformed e-mail is 422; a recovery request needs no token and ignores one', async () => {
    for (const payload of [{ email: 'not-an-email' }, {}, { email: 'a@b.example', extra: 1 }]) {
      const res = await a.inject({ method: 'POST', url: '/api/v1/auth/password-recovery', payload });
      assert.equal(res.statusCode, 422, JSON.stringify(payload));
    }
    const user = await createUser(a);
    const res = await requestRecovery(a, user.email.toUpperCase(), { headers: admin.auth });
    assert.equal(res.statusCode, 202);
    const mail = await nextMail(user.email, 0);
    assert.equal(mail.headers.to, user.email, 'sent to the stored address, matched in any case');
  });

  it('a customer created by a platform order signs in for the first time through recovery, which activates the account', async () => {
    await seedProduct(a, 'MUG-CERAMIC-350', { stock: 1000 });
    await seedProduct(a, 'TEA-EARLGREY-100', { stock: 1000 });
    const email = `platform-${crypto.randomBytes(3).toString('hex')}@example.com`;
    const payload = { ...fixturePayload(), id: 9100000000000 + crypto.randomInt(1e6), email, customer: { email, first_name: 'Pat', last_name: 'Form' } };
    assert.equal((await sendInbound(a, JSON.stringify(payload))).statusCode, 200);
    const customer = await waitFor(async () => a.ctx.db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst());
    assert.equal(customer.is_active, false);
    assert.equal(customer.password_hash, null);
    assert.equal(customer.email_verified, false, 'nobody has proved the address yet');
    assert.equal((await login(a, email, 'any-password-at-all')).statusCode, 401, 'no password: no sign-in');

    const res = await requestRecovery(a, email);
    assert.deepEqual(res.json(), ACCEPTED);
    const { headers, body } = await nextMail(email, 0);
    assert.equal(headers.subject, 'Choose a password for your account');
    assert.match(body, /Hello Pat Form/);
    const reset = await resetPassword(a, tokenIn(body), NEW_PASSWORD);
    assert.equal(reset.statusCode, 200, reset.body);
    const row = await a.ctx.db.selectFrom('users').selectAll().where('id', '=', customer.id).executeTakeFirstOrThrow();
    assert.equal(row.is_active, true);
    assert.equal(row.awaiting_password, false);
    assert.equal(row.email_verified, true, 'a reset through the address verifies it');
    const signedIn = await login(a, email, NEW_PASSWORD);
    assert.equal(signedIn.statusCode, 200, signedIn.body);
    assert.equal((await me(a, signedIn.json().access_token)).json<{ is_active: boolean }>().is_active, true);
  });

  it('an account an administrator deactivated gets no e-mail and stays inactive; so does a platform customer an administrator deactivated', async () => {
    const user = await createUser(a);
    const off = await api(a, admin, { method: 'PATCH', url: `/api/v1/users/${user.user.id}`, payload: { is_active: false } });
    assert.equal(off.statusCode, 200);
    const customerEmail = `customer-${crypto.randomBytes(3).toString('hex')}@example.com`;
    const customer = await a.ctx.db
      .insertInto('users')
      .values({ email: customerEmail, full_name: 'Blocked Customer', password_hash: null, is_active: false, awaiting_password: true })
      .returningAll()
      .executeTakeFirstOrThrow();
    assert.equal((await api(a, admin, { method: 'PATCH', url: `/api/v1/users/${customer.id}`, payload: { is_active: false } })).statusCode, 200);

    const marker = await createUser(a);
    for (const email of [user.email, customerEmail, marker.email]) assert.deepEqual((await requestRecovery(a, email)).json(), ACCEPTED);
    // jobs run in order: once the marker's e-mail is out, the others were decided
    await nextMail(marker.email, 0);
    await waitFor(async () => {
      const jobs = await a.ctx.queue.boss.findJobs('password-recovery-email');
      return jobs.every((j) => j.state === 'completed') ? true : undefined;
    });
    assert.equal(mailsTo(user.email), 0);
    assert.equal(mailsTo(customerEmail), 0);
    assert.deepEqual(await resetRows(user.user.id), []);
    assert.deepEqual(await resetRows(customer.id), []);
  });

  it('an unknown e-mail: the same answer, the same work (one job, no query), no e-mail', async () => {
    const known = await createUser(a);
    const unknown = `nobody-${crypto.randomBytes(3).toString('hex')}@example.com`;
    // the statements each request runs through the app's database handle (the background jobs,
    // which run meanwhile, outside the requests' async context, are not counted)
    const queries = new AsyncLocalStorage<string[]>();
    const executor = a.ctx.db.getExecutor();
    const original = executor.executeQuery.bind(executor);
    (executor as { executeQuery: typeof original }).executeQuery = (query, ...rest) => {
      queries.getStore()?.push(query.sql);
      return original(query, ...rest);
    };
    const answers: LightMyRequestResponse[] = [];
    const ran: string[][] = [[], []];
    try {
      answers.push(await queries.run(ran[0], () => requestRecovery(a, known.email)));
      answers.push(await queries.run(ran[1], () => requestRecovery(a, unknown)));
    } finally {
      (executor as { executeQuery: typeof original }).executeQuery = original;
    }
    assert.deepEqual(ran, [[], []], 'neither request reads anything: each only enqueues its job');
    const [k, u] = answers;
    assert.equal(k.statusCode, 202);
    assert.equal(u.statusCode, k.statusCode);
    assert.equal(u.body, k.body);
    const headerNames = (r: LightMyRequestResponse) => Object.keys(r.headers).sort();
    assert.deepEqual(headerNames(u), headerNames(k));
    assert.equal(u.headers['content-length'], k.headers['content-length']);
    // one job each, of the same queue, carrying the e-mail only
    const jobs = await a.ctx.queue.boss.findJobs<{ email: string }>('password-recovery-email');
    assert.deepEqual(jobs.filter((j) => j.data.email === known.email).map((j) => Object.keys(j.data)), [['email']]);
    assert.deepEqual(jobs.filter((j) => j.data.email === unknown).map((j) => Object.keys(j.data)), [['email']]);
    // the known one gets its e-mail; the unknown one's job completes without one
    await nextMail(known.email, 0);
    await waitFor(async () => {
      const [job] = await a.ctx.queue.boss.findJobs<{ email: string }>('password-recovery-email', { data: { email: unknown } });
      return job?.state === 'completed' ? job : undefined;
    });
    assert.equal(mailsTo(unknown), 0);
  });
});

describe('the recovery e-mail and its configuration', () => {
  const user = { email: 'kim@example.com', full_name: 'Kim', password_hash: '$2b$04$x' } as UserRow;
  const token = crypto.randomBytes(32).toString('base64url');

  it('with PASSWORD_RESET_URL the e-mail carries the link, the token in place of {token}', () => {
    const config = loadConfig({ PASSWORD_RESET_URL: 'https://shop.example/reset?token={token}', PASSWORD_RESET_TTL_SECONDS: '600' });
    const { subject, text } = resetMail(user, token, config);
    assert.equal(subject, 'Reset your password');
    assert.ok(text.includes(`\nhttps://shop.example/reset?token=${token}\n`), text);
    assert.match(text, /valid for 10 minutes/);
    assert.doesNotMatch(text, /POST \/api\/v1/);
    assert.equal(tokenIn(text), token);
  });

  it('PASSWORD_RESET_URL must be an http(s) URL with {token}; the TTL a positive number of seconds', () => {
    assert.throws(() => loadConfig({ PASSWORD_RESET_URL: 'https://shop.example/reset' }), /PASSWORD_RESET_URL must contain \{token\}/);
    assert.throws(() => loadConfig({ PASSWORD_RESET_URL: 'javascript:{token}' }), /PASSWORD_RESET_URL must use http: or https:/);
    assert.throws(() => loadConfig({ PASSWORD_RESET_URL: 'not a url {token}' }), /PASSWORD_RESET_URL is not a valid URL/);
    assert.equal(loadConfig({ PASSWORD_RESET_URL: 'https://shop.example/r/{token}' }).passwordResetUrl, 'https://shop.example/r/{token}');
    assert.equal(loadConfig({}).passwordResetTtlSeconds, 1800);
    assert.equal(loadConfig({}).passwordResetUrl, undefined);
    assert.throws(() => loadConfig({ PASSWORD_RESET_TTL_SECONDS: '0' }), /PASSWORD_RESET_TTL_SECONDS must be between 1 and/);
    assert.throws(() => loadConfig({ PASSWORD_RESET_TTL_SECONDS: 'soon' }), /PASSWORD_RESET_TTL_SECONDS must be an integer/);
  });
});
