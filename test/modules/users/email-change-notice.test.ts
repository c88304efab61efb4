import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { maskEmail } from '../../../src/modules/users/email-change.service.ts';
import { api, buildTestApp, createUser, errorBody, waitFor, type TestUser } from '../../helpers/app.ts';
import { parseMessage, startSmtpServer, type TestSmtpServer } from '../../mail/smtp-server.ts';

const fresh = (name: string) => `${name}-${crypto.randomBytes(3).toString('hex')}@example.com`;

describe('e-mail change notice (SMTP)', () => {
  let smtp: TestSmtpServer;
  let app: FastifyInstance;
  let admin: TestUser;
  const noticeJobs = (userId: number) => app.ctx.queue.boss.findJobs<{ userId: number; previousEmail: string }>('user-email-changed', { data: { userId } });
  const patch = (who: TestUser, id: number, payload: object) => api(app, who, { method: 'PATCH', url: `/api/v1/users/${id}`, payload });

  before(async () => {
    smtp = await startSmtpServer(undefined);
    app = await buildTestApp(undefined, { smtpUrl: smtp.url });
    admin = await createUser(app, { admin: true });
  });
  after(() => smtp.close());

  it('a user changing their own e-mail: the previous address is told, the job committed with the change', async () => {
    const user = await createUser(app, { fullName: 'Old Address' });
    const previous = user.email;
    const next = fresh('newaddress');
    const res = await patch(user, user.user.id, { email: next });
    assert.equal(res.statusCode, 200, res.body);
    // committed in the same transaction: the job exists as soon as the response is out
    const jobs = await noticeJobs(user.user.id);
    assert.equal(jobs.length, 1);
    assert.equal(jobs[0].data.previousEmail, previous);

    const message = await waitFor(async () => smtp.messages.find((m) => m.to.includes(previous)));
    assert.deepEqual(message.to, [previous], 'only the previous address');
    const { headers, body } = parseMessage(message.raw);
    assert.equal(headers.subject, 'The e-mail address of your account was changed');
    assert.ok(body.includes(`changed from ${previous} to ${maskEmail(next)}`), body);
    assert.ok(!body.includes(next), 'the new address is not given away in full');
    assert.match(body, /If you did not, someone else may have access to your account/);
    assert.match(body, /POST \/api\/v1\/auth\/email-change\/revert/, 'the notice carries the revert link');
    // the new address gets only the confirmation link
    const confirmation = await waitFor(async () => smtp.messages.find((m) => m.to.includes(next)));
    assert.equal(parseMessage(confirmation.raw).headers.subject, 'Confirm the e-mail address of your account');
  });

  it('an administrator changing a user\'s e-mail: the previous address is told too', async () => {
    const user = await createUser(app);
    const previous = user.email;
    const res = await patch(admin, user.user.id, { email: fresh('by-admin'), full_name: 'Renamed' });
    assert.equal(res.statusCode, 200);
    await waitFor(async () => smtp.messages.find((m) => m.to.includes(previous)));
  });

  it('no notice when the e-mail does not change (absent, the same, another case) or the change is refused', async () => {
    const user = await createUser(app);
    const other = await createUser(app);
    assert.equal((await patch(user, user.user.id, { full_name: 'Just A Rename' })).statusCode, 200);
    assert.equal((await patch(user, user.user.id, { email: user.email })).statusCode, 200);
    assert.equal((await patch(user, user.user.id, { email: user.email.toUpperCase() })).statusCode, 200);
    const taken = await patch(user, user.user.id, { email: other.email });
    assert.equal(taken.statusCode, 400);
    assert.equal(errorBody(taken).error_code, 'EMAIL_EXISTS');
    assert.equal((await patch(other, user.user.id, { email: fresh('not-yours') })).statusCode, 403);
    assert.deepEqual(await noticeJobs(user.user.id), []);
  });

  it('the new address is masked: first character and domain', () => {
    assert.equal(maskEmail('jane.doe@example.com'), 'j***@example.com');
    assert.equal(maskEmail('x@y.example'), 'x***@y.example');
    assert.equal(maskEmail('@odd'), '***');
  });
});
