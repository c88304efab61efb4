import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { INTERNAL_RETRY } from '../../src/jobs/queue.ts';
import { api, buildTestApp, createUser, errorBody, waitFor, type TestUser } from '../helpers/app.ts';
import { parseMessage } from '../mail/smtp-server.ts';

async function outboxFiles(dir: string): Promise<string[]> {
  try {
    return (await fs.readdir(dir)).filter((f) => f.endsWith('.eml')).sort();
  } catch {
    return [];
  }
}

describe('welcome e-mail job (no SMTP_URL: .eml files in DATA_DIR/outbox)', () => {
  let app: FastifyInstance;
  let admin: TestUser;
  let outbox: string;
  const welcomeJobs = (userId: number) => app.ctx.queue.boss.findJobs<{ userId: number }>('user-welcome-email', { data: { userId } });
  const create = (email: string, fullName = 'Welcome Person') =>
    api(app, admin, { method: 'POST', url: '/api/v1/users', payload: { email, full_name: fullName, password: 'password123' } });

  before(async () => {
    app = await buildTestApp(undefined);
    admin = await createUser(app, { admin: true });
    outbox = path.join(app.ctx.config.dataDir, 'outbox');
  });
  after(() => app.close());

  it('the queue is created with at most 3 attempts and exponential backoff', async () => {
    const queue = await app.ctx.queue.boss.getQueue('user-welcome-email');
    assert.ok(queue);
    assert.equal(queue.retryLimit, 2, '1 attempt + 2 retries = 3 attempts');
    assert.equal(queue.retryBackoff, true);
    assert.equal(queue.retryDelay, INTERNAL_RETRY.retryDelay);
  });

  it('POST /users queues the job with the user and an .eml file appears in the outbox', async () => {
    const email = 'welcome.outbox@example.com';
    const res = await create(email, 'Outbox Person');
    assert.equal(res.statusCode, 201, res.body);
    const userId = res.json().id as number;

    // committed with the user: the job exists as soon as the response is out
    const jobs = await welcomeJobs(userId);
    assert.equal(jobs.length, 1);
    assert.deepEqual(jobs[0].data, { userId });
    assert.equal(jobs[0].retryLimit, 2);
    assert.equal(jobs[0].retryBackoff, true);

    const file = await waitFor(async () => {
      for (const f of await outboxFiles(outbox)) {
        const raw = await fs.readFile(path.join(outbox, f), 'utf8');
        if (raw.includes(`To: ${email}`)) return { f, raw };
      }
      return undefined;
    });
    const { headers, body } = parseMessage(file.raw);
    assert.equal(headers.to, email);
    assert.equal(headers.subject, 'Welcome to the Order Service');
    assert.match(headers.from, /no-reply@example\.com/);
    assert.ok(body.includes('Hello Outbox Person'), body);

    const done = await waitFor(async () => {
      const [job] = await welcomeJobs(userId);
      return job?.state === 'completed' ? job : undefined;
    });
    assert.equal(done.retryCount, 0);
  });

  it('no job and no mail when the creation is refused', async () => {
    const before = (await outboxFiles(outbox)).length;
    const dup = await create(admin.email);
    assert.equal(dup.statusCode, 400);
    assert.equal(errorBody(dup).error_code, 'EMAIL_EXISTS');
    const invalid = await create('not-an-email');
    assert.equal(invalid.statusCode, 422);
    const all = await app.ctx.queue.boss.findJobs('user-welcome-email');
    const users = await app.ctx.db.selectFrom('users').select('id').execute();
    const ids = new Set(users.map((u) => u.id));
    for (const job of all) assert.ok(ids.has((job.data as { userId: number }).userId), 'every job belongs to an existing user');
    assert.equal((await outboxFiles(outbox)).length, before);
  });

  it('racing creations of one e-mail: one user, one job', async () => {
    const email = 'welcome.race@example.com';
    const results = await Promise.all([create(email), create(email.toUpperCase()), create(email)]);
    assert.deepEqual(results.map((r) => r.statusCode).sort(), [201, 400, 400]);
    const userId = results.find((r) => r.statusCode === 201)!.json().id as number;
    assert.equal((await welcomeJobs(userId)).length, 1);
    const all = await app.ctx.queue.boss.findJobs<{ userId: number }>('user-welcome-email');
    const users = await app.ctx.db.selectFrom('users').select(['id', 'email']).execute();
    assert.equal(users.filter((u) => u.email.toLowerCase() === email).length, 1);
    assert.equal(all.length, new Set(all.map((j) => j.data.userId)).size, 'never two jobs for one user');
  });

  it('a job sent inside a rolled-back transaction never exists (send(trx) is transactional)', async () => {
    const marker = 987654321;
    await assert.rejects(
      app.ctx.db.transaction().execute(async (trx) => {
        await app.ctx.queue.send(trx, 'user-welcome-email', { userId: marker });
        throw new Error('roll back');
      }),
      /roll back/,
    );
    assert.deepEqual(await welcomeJobs(marker), []);
    // the same call in a committed transaction does create it (the check above can fail)
    await app.ctx.db.transaction().execute(async (trx) => {
      await app.ctx.queue.send(trx, 'user-welcome-email', { userId: marker + 1 });
    });
    assert.equal((await welcomeJobs(marker + 1)).length, 1);
  });

  it('a user deleted before the job runs gets no mail; the job still completes', async () => {
    // let the mails of the users created above go out first
    await waitFor(async () => {
      const jobs = await app.ctx.queue.boss.findJobs('user-welcome-email');
      return jobs.every((j) => j.state === 'completed' || j.state === 'failed') ? true : undefined;
    });
    const before = (await outboxFiles(outbox)).length;
    const ghost = 2000000001;
    const id = await app.ctx.queue.sendNow('user-welcome-email', { userId: ghost });
    assert.ok(id);
    const job = await waitFor(async () => {
      const j = await app.ctx.queue.boss.getJobById('user-welcome-email', id);
      return j?.state === 'completed' ? j : undefined;
    });
    assert.equal(job.retryCount, 0);
    assert.equal((await outboxFiles(outbox)).length, before);
  });
});
