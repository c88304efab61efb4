import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { createMailer } from '../../src/mail/mailer.ts';
import { api, buildTestApp, createUser, testConfig, waitFor } from '../helpers/app.ts';
import { parseMessage, startSmtpServer } from './smtp-server.ts';

describe('e-mail over SMTP', () => {
  it('POST /users delivers the welcome message to a real SMTP server', async (t) => {
    const smtp = await startSmtpServer(t);
    const app = await buildTestApp(t, { smtpUrl: smtp.url, mailFrom: 'Order Service <no-reply@shop.test>' });
    const admin = await createUser(app, { admin: true });

    const email = 'zoe.welcome@example.com';
    const res = await api(app, admin, {
      method: 'POST',
      url: '/api/v1/users',
      payload: { email, full_name: 'Zoë Ångström', password: 'password123' },
    });
    assert.equal(res.statusCode, 201, res.body);
    const userId = res.json().id as number;

    const message = await waitFor(async () => smtp.messages.find((m) => m.to.includes(email)));
    assert.deepEqual(message.to, [email], 'envelope recipient');
    assert.equal(message.from, 'no-reply@shop.test', 'envelope sender');
    const { headers, body } = parseMessage(message.raw);
    assert.equal(headers.to, email);
    assert.match(headers.from, /no-reply@shop\.test/);
    assert.equal(headers.subject, 'Welcome to the Order Service');
    assert.match(headers['content-type'], /^text\/plain; charset=utf-8/i);
    assert.ok(body.includes('Hello Zoë Ångström'), body);
    assert.ok(body.includes(email));
    assert.equal(smtp.messages.length, 1, 'exactly one message');

    const [job] = await waitFor(async () => {
      const jobs = await app.ctx.queue.boss.findJobs<{ userId: number }>('user-welcome-email', { data: { userId } });
      return jobs[0]?.state === 'completed' ? jobs : undefined;
    });
    assert.equal(job.retryCount, 0);
    await assert.rejects(fs.access(path.join(app.ctx.config.dataDir, 'outbox')), 'nothing written to the outbox when SMTP is configured');
  });

  it('the mailer itself sends a message over SMTP', async (t) => {
    const smtp = await startSmtpServer(t);
    const config = await testConfig(t, { smtpUrl: smtp.url, databaseUrl: ':memory:' });
    const mailer = createMailer(config);
    t.after(() => mailer.close());
    await mailer.send({ to: 'direct@example.com', subject: 'Direct', text: 'Line one\nLine two\n' });
    assert.equal(smtp.messages.length, 1);
    const { headers, body } = parseMessage(smtp.messages[0].raw);
    assert.equal(headers.subject, 'Direct');
    assert.equal(body.trim(), 'Line one\nLine two');
  });

  it('a refusing server makes send() reject (so the job fails and is retried)', async (t) => {
    const smtp = await startSmtpServer(t, { rejectRcpt: true });
    const config = await testConfig(t, { smtpUrl: smtp.url, databaseUrl: ':memory:' });
    const mailer = createMailer(config);
    t.after(() => mailer.close());
    await assert.rejects(mailer.send({ to: 'nobody@example.com', subject: 'x', text: 'x' }), /550|Mailbox unavailable/);
    assert.equal(smtp.messages.length, 0);
  });
});
