import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { ApiVersion } from '../../../src/http/api-version.ts';
import { api, buildTestApp, createUser, errorBody, TEST_PASSWORD, waitFor, type TestUser } from '../../helpers/app.ts';
import { parseMessage, startSmtpServer, type TestSmtpServer } from '../../mail/smtp-server.ts';
import { login, me, requestRecovery, resetPassword, tokenIn } from '../auth/auth.helpers.ts';

const fresh = (name: string) => `${name}-${crypto.randomBytes(3).toString('hex')}@evil.example`;

const CHANGED = 'The e-mail address of your account was changed';
const CONFIRM = 'Confirm the e-mail address of your account';
const RESTORED = 'Your e-mail address is restored: choose a new password';
const UNDONE = 'An e-mail change of your account was undone';

/**
 * Issue 54, finding 1, replayed on real mail (the SMTP test server): with a stolen access token the
 * attacker moves the account to a1, a2, a3 and holds the links mailed to a1 and a2. Whatever order the
 * links are used in, the owner's link (the oldest) gives the account back to the owner for good.
 */
describe('e-mail reverts that only ever give the account back to its owner (SMTP)', () => {
  let smtp: TestSmtpServer;
  let app: FastifyInstance;

  /** The bodies of the e-mails to `email` with `subject`, once there are `count` of them. */
  const mails = async (email: string, subject: string, count = 1) => {
    const found = await waitFor(async () => {
      const list = smtp.messages.filter((m) => m.to.includes(email) && parseMessage(m.raw).headers.subject === subject);
      return list.length >= count ? list : undefined;
    });
    return found.map((m) => parseMessage(m.raw).body);
  };
  const tokenMailed = async (email: string, subject: string) => tokenIn((await mails(email, subject))[0]);
  const post = (url: string, token: string) => app.inject({ method: 'POST', url: `/api/v1/auth/${url}`, payload: { token } });
  const userRow = (id: number) => app.ctx.db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const refused = async (url: string, token: string, code = 'INVALID_EMAIL_TOKEN') => {
    const res = await post(url, token);
    assert.equal(res.statusCode, 400, `${url}: ${res.body}`);
    assert.equal(errorBody(res).error_code, code, `${url}: ${res.body}`);
  };
  /** The recovery request for `email` has been handled (its job completed). */
  const recoveryHandled = (email: string) =>
    waitFor(async () => {
      const jobs = await app.ctx.queue.boss.findJobs<{ email: string }>('password-recovery-email', { data: { email } });
      return jobs.length > 0 && jobs.every((j) => j.state === 'completed') ? true : undefined;
    });

  /**
   * The attack's first part, through `version`'s PATCH with the stolen access token (v2 asks for the
   * password too: there the attacker also has it). The links mailed for each change.
   */
  async function stealThrough(version: ApiVersion, victim: TestUser) {
    const a = [fresh('a1'), fresh('a2'), fresh('a3')];
    const verify: string[] = [];
    for (const email of a) {
      const payload = version === 'v1' ? { email } : { email, current_password: TEST_PASSWORD };
      const res = await api(app, victim, { method: 'PATCH', url: `/api/${version}/users/${victim.user.id}`, payload });
      assert.equal(res.statusCode, 200, res.body);
      // the confirmation link goes out while the account still has the address: the attacker waits for it
      verify.push(await tokenMailed(email, CONFIRM));
    }
    return {
      a,
      /** to the owner's address: undoes the change to a1 */
      ownerRevert: await tokenMailed(victim.email, CHANGED),
      /** to a1: undoes the change a1 → a2 */
      revertA1: await tokenMailed(a[0], CHANGED),
      /** to a2: undoes the change a2 → a3 */
      revertA2: await tokenMailed(a[1], CHANGED),
      verify,
    };
  }

  /** After the owner's revert: the owner's address, verified; no session, no password of before; every attacker link dead. */
  async function ownerHoldsTheAccount(victim: TestUser, stolen: Awaited<ReturnType<typeof stealThrough>>, attackerPasswords: string[]) {
    const row = await userRow(victim.user.id);
    assert.equal(row.email, victim.email);
    assert.equal(row.email_verified, true);
    assert.equal((await me(app, victim.token)).statusCode, 401, 'the stolen access token is dead');
    for (const password of [TEST_PASSWORD, ...attackerPasswords]) assert.equal((await login(app, victim.email, password)).statusCode, 401, 'no password of before works');
    for (const token of [stolen.revertA1, stolen.revertA2]) assert.notEqual((await post('email-change/revert', token)).statusCode, 200);
    for (const token of stolen.verify) assert.notEqual((await post('verify-email', token)).statusCode, 200);
    // the owner chooses a new password through the link the notice brought, and signs in
    const notices = await mails(victim.email, RESTORED);
    assert.equal(notices.length, 1);
    assert.match(notices[0], /Every session of the account has ended and its password no longer works/);
    assert.equal((await resetPassword(app, tokenIn(notices[0]), 'owner-again-1')).statusCode, 200);
    const signedIn = await login(app, victim.email, 'owner-again-1');
    assert.equal(signedIn.statusCode, 200);
    // none of the attacker's addresses recovers anything
    for (const email of stolen.a) assert.equal((await requestRecovery(app, email)).statusCode, 202);
    for (const email of stolen.a) await recoveryHandled(email);
    const resets = await app.ctx.db.selectFrom('password_reset_tokens').select('email').where('user_id', '=', victim.user.id).where('used_at', 'is', null).where('revoked_at', 'is', null).execute();
    assert.deepEqual(resets, [], 'no live reset token, to any address');
    assert.equal((await userRow(victim.user.id)).email, victim.email);
    return signedIn.json<{ access_token: string }>().access_token;
  }

  before(async () => {
    smtp = await startSmtpServer(undefined);
    app = await buildTestApp(undefined, { smtpUrl: smtp.url });
  });
  after(() => smtp.close());

  for (const version of ['v1', 'v2'] as const) {
    it(`${version}: the owner reverts first; the attacker's links, verification and recovery then fail, and the owner keeps the account`, async () => {
      const victim = await createUser(app);
      const stolen = await stealThrough(version, victim);
      const res = await post('email-change/revert', stolen.ownerRevert);
      assert.equal(res.statusCode, 200, res.body);
      // the attacker, without a session: verify a1, revert with the a1 and a2 links, recover through a1
      await refused('verify-email', stolen.verify[0]);
      await refused('email-change/revert', stolen.revertA1);
      await refused('email-change/revert', stolen.revertA2);
      const access = await ownerHoldsTheAccount(victim, stolen, []);
      assert.equal((await me(app, access)).statusCode, 200);
      // both addresses of the revert heard of it: the owner's (restored) and a3 (replaced)
      const undone = await mails(stolen.a[2], UNDONE);
      assert.match(undone[0], /This address is no longer the account's/);
      assert.equal(smtp.messages.filter((m) => stolen.a.slice(0, 2).some((e) => m.to.includes(e)) && parseMessage(m.raw).headers.subject === UNDONE).length, 0);
    });

    it(`${version}: the attacker uses the a1 and a2 links first, verifies a1, resets the password through it, changes address and password again — the owner's link still wins`, async () => {
      const victim = await createUser(app);
      const stolen = await stealThrough(version, victim);
      const [a1, a2, a3] = stolen.a;
      await refused('verify-email', stolen.verify[0]); // the account is at a3 for now
      // a2's link undoes a2 → a3; a1's link undoes a1 → a2: the account is at a1, verified
      assert.equal((await post('email-change/revert', stolen.revertA2)).statusCode, 200);
      assert.equal((await userRow(victim.user.id)).email, a2);
      assert.equal((await post('email-change/revert', stolen.revertA1)).statusCode, 200);
      assert.equal((await userRow(victim.user.id)).email, a1);
      // each revert told both of its addresses; the restored one got a reset link
      await mails(a3, UNDONE);
      await mails(a2, UNDONE);
      const toA1 = await mails(a1, RESTORED);
      // the confirmation link of a1 belongs to the change still in effect: it works (the address was restored verified anyway)
      assert.equal((await post('verify-email', stolen.verify[0])).statusCode, 200);
      // the attacker takes the account: a password through a1, then another address and another password
      assert.equal((await resetPassword(app, tokenIn(toA1[0]), 'attacker-password-1')).statusCode, 200);
      const attacker = (await login(app, a1, 'attacker-password-1')).json<{ access_token: string }>().access_token;
      const attackerAuth = { authorization: `Bearer ${attacker}` };
      const a4 = fresh('a4');
      const payload = version === 'v1' ? { email: a4 } : { email: a4, current_password: 'attacker-password-1' };
      assert.equal((await app.inject({ method: 'PATCH', url: `/api/${version}/users/${victim.user.id}`, payload, headers: attackerAuth })).statusCode, 200);
      const revertA1Again = tokenIn((await mails(a1, CHANGED, 2))[1]);
      const pw = await app.inject({ method: 'POST', url: '/api/v1/auth/password', headers: attackerAuth, payload: { current_password: 'attacker-password-1', new_password: 'attacker-password-2' } });
      assert.equal(pw.statusCode, 204);
      const attackerAgain = (await login(app, a4, 'attacker-password-2')).json<{ access_token: string }>().access_token;

      // the owner's link: issued first, voided by none of it
      const res = await post('email-change/revert', stolen.ownerRevert);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal((await me(app, attackerAgain)).statusCode, 401, "the attacker's session ended");
      await refused('email-change/revert', revertA1Again);
      await refused('verify-email', stolen.verify[1]);
      await refused('verify-email', stolen.verify[2]);
      await ownerHoldsTheAccount(victim, stolen, ['attacker-password-1', 'attacker-password-2']);
      for (const email of [a1, a4]) assert.equal((await login(app, email, 'attacker-password-2')).statusCode, 401);
      await mails(a4, UNDONE);
    });
  }

  it('a revert voids only the links of its change and later ones: an earlier change stays revertible, and the owner-to-be of a later one cannot void it', async () => {
    const user = await createUser(app);
    const [b1, b2] = [fresh('b1'), fresh('b2')];
    for (const email of [b1, b2]) assert.equal((await api(app, user, { method: 'PATCH', url: `/api/v1/users/${user.user.id}`, payload: { email } })).statusCode, 200);
    const first = await tokenMailed(user.email, CHANGED);
    const second = await tokenMailed(b1, CHANGED);
    const confirmB2 = await tokenMailed(b2, CONFIRM); // the address the account has: its link goes out
    assert.equal((await post('email-change/revert', second)).statusCode, 200);
    assert.equal((await userRow(user.user.id)).email, b1);
    await refused('email-change/revert', second, 'EMAIL_TOKEN_USED');
    assert.equal((await post('email-change/revert', first)).statusCode, 200);
    assert.equal((await userRow(user.user.id)).email, user.email);
    // the links of a change a revert undid are void, with a detail that says why
    const res = await post('verify-email', confirmB2);
    assert.equal(res.statusCode, 400);
    assert.match(errorBody(res).detail, /undone/);
  });
});
