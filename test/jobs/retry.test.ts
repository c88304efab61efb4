import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, waitFor } from '../helpers/app.ts';
import { startSmtpServer } from '../mail/smtp-server.ts';

/** A port on 127.0.0.1 that nothing listens on (bound, read, released). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function createAndWaitForFailure(app: FastifyInstance, email: string) {
  const admin = await createUser(app, { admin: true });
  const res = await api(app, admin, {
    method: 'POST',
    url: '/api/v1/users',
    payload: { email, full_name: 'Unlucky', password: 'password123' },
  });
  assert.equal(res.statusCode, 201, 'the user is created whatever happens to the mail');
  const userId = res.json().id as number;
  const job = await waitFor(
    async () => {
      const [j] = await app.ctx.queue.boss.findJobs<{ userId: number }>('user-welcome-email', { data: { userId } });
      return j?.state === 'failed' ? j : undefined;
    },
    30000,
    100,
  );
  const user = await app.ctx.db.selectFrom('users').selectAll().where('id', '=', userId).executeTakeFirst();
  assert.ok(user && user.deleted_at === null, 'a failed welcome mail never undoes the user');
  return job;
}

describe('failed jobs: 3 attempts at most, exponential backoff', () => {
  it('an SMTP server that refuses the recipient sees exactly 3 attempts, spaced further apart each time', { timeout: 60000 }, async (t) => {
    const smtp = await startSmtpServer(t, { rejectRcpt: true });
    const app = await buildTestApp(t, { smtpUrl: smtp.url });
    const email = 'refused@example.com';
    const job = await createAndWaitForFailure(app, email);

    assert.equal(job.retryCount, 2, 'two retries after the first attempt');
    assert.equal(job.retryLimit, 2);
    assert.equal(job.retryBackoff, true);
    assert.match(JSON.stringify(job.output), /550|Mailbox unavailable/, 'the last error is kept on the job');

    const attempts = smtp.attempts.filter((a) => a.to === email).map((a) => a.at);
    assert.equal(attempts.length, 3, 'exactly 3 attempts');
    const [first, second] = [attempts[1] - attempts[0], attempts[2] - attempts[1]];
    // pg-boss backoff with retryDelay 1: retry n waits 2^(n-1)..2^n seconds (jittered)
    assert.ok(first >= 900, `first retry after about 1-2 s, was ${first} ms`);
    assert.ok(second >= 1900, `second retry after about 2-4 s, was ${second} ms`);
    t.diagnostic(`retries after ${first} ms and ${second} ms`);
    assert.equal(smtp.messages.length, 0);
  });

  it('SMTP_URL pointing at a closed port: the job fails after 3 attempts', { timeout: 60000 }, async (t) => {
    const app = await buildTestApp(t, { smtpUrl: `smtp://127.0.0.1:${await closedPort()}` });
    const job = await createAndWaitForFailure(app, 'unreachable@example.com');
    assert.equal(job.state, 'failed');
    assert.equal(job.retryCount, 2);
    assert.match(JSON.stringify(job.output), /ECONNREFUSED/);
  });
});
