import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { purgeExpiredRefreshTokens } from '../../src/modules/auth/auth.repository.ts';
import { purgeExpiredEmailTokens, purgeSettledEmailChanges } from '../../src/modules/users/email-tokens.repository.ts';
import { retentionCutoff } from '../../src/jobs/retention.ts';
import { buildTestApp, createUser, waitFor, type TestUser } from '../helpers/app.ts';

const HOUR = 3600 * 1000;

describe('scheduled purge of expired refresh tokens', () => {
  let app: FastifyInstance;
  let alice: TestUser;
  before(async () => {
    app = await buildTestApp(undefined);
    alice = await createUser(app);
  });
  after(() => app.close());

  /** Inserts tokens of every kind and returns their ids by kind. */
  async function seed() {
    const now = Date.now();
    const rows = {
      expiredLongAgo: { expires_at: new Date(now - 48 * HOUR), revoked_at: null },
      revokedLongAgo: { expires_at: new Date(now + 48 * HOUR), revoked_at: new Date(now - 30 * HOUR) },
      expiredRecently: { expires_at: new Date(now - 1 * HOUR), revoked_at: null },
      revokedRecently: { expires_at: new Date(now + 48 * HOUR), revoked_at: new Date(now - 1 * HOUR) },
      live: { expires_at: new Date(now + 7 * 24 * HOUR), revoked_at: null },
    };
    const ids: Record<keyof typeof rows, string> = {} as Record<keyof typeof rows, string>;
    for (const [kind, r] of Object.entries(rows) as [keyof typeof rows, (typeof rows)[keyof typeof rows]][]) {
      ids[kind] = crypto.randomUUID();
      await app.ctx.db.insertInto('refresh_tokens').values({ jti: ids[kind], user_id: alice.user.id, ...r }).execute();
    }
    return ids;
  }

  const present = async (jtis: string[]) =>
    new Set((await app.ctx.db.selectFrom('refresh_tokens').select('jti').where('jti', 'in', jtis).execute()).map((r) => r.jti));

  it('deletes tokens expired or revoked more than a day ago, and nothing else', async () => {
    const ids = await seed();
    const purged = await purgeExpiredRefreshTokens(app.ctx.db, retentionCutoff(1)!);
    assert.equal(purged, 2);
    const left = await present(Object.values(ids));
    assert.deepEqual(
      Object.fromEntries(Object.entries(ids).map(([k, jti]) => [k, left.has(jti)])),
      { expiredLongAgo: false, revokedLongAgo: false, expiredRecently: true, revokedRecently: true, live: true },
    );
    // the token of the login in createUser is untouched and still works
    const res = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: alice.refreshToken } });
    assert.equal(res.statusCode, 200);
    assert.equal(await purgeExpiredRefreshTokens(app.ctx.db, retentionCutoff(1)!), 0, 'idempotent');
  });

  it('is scheduled with pg-boss (hourly cron) on its own queue', async () => {
    const schedules = await app.ctx.queue.boss.getSchedules('refresh-tokens-purge');
    assert.equal(schedules.length, 1);
    assert.equal(schedules[0].name, 'refresh-tokens-purge');
    assert.equal(schedules[0].cron, '17 * * * *');
    const queue = await app.ctx.queue.boss.getQueue('refresh-tokens-purge');
    assert.ok(queue, 'the queue exists');
  });

  it('a job on the queue runs the purge through the worker', async () => {
    const ids = await seed();
    const id = await app.ctx.queue.sendNow('refresh-tokens-purge', {});
    assert.ok(id);
    await waitFor(async () => {
      const job = await app.ctx.queue.boss.getJobById('refresh-tokens-purge', id);
      return job?.state === 'completed' ? job : undefined;
    });
    const left = await present(Object.values(ids));
    assert.equal(left.has(ids.expiredLongAgo), false);
    assert.equal(left.has(ids.revokedLongAgo), false);
    assert.equal(left.has(ids.live), true);
    assert.equal(left.has(ids.expiredRecently), true);
  });

  it('deletes e-mail changes older than a day once no token names them, after their tokens', async () => {
    const { db } = app.ctx;
    const now = Date.now();
    const change = async (changedAt: number, tokenExpiresAt?: number) => {
      const { id } = await db
        .insertInto('email_changes')
        .values({ user_id: alice.user.id, previous_email: alice.email, new_email: `n${crypto.randomUUID()}@example.com`, changed_at: new Date(changedAt) })
        .returning('id')
        .executeTakeFirstOrThrow();
      if (tokenExpiresAt !== undefined) {
        await db
          .insertInto('email_tokens')
          .values({ user_id: alice.user.id, purpose: 'revert', token_hash: crypto.randomBytes(32).toString('hex'), email: alice.email, expires_at: new Date(tokenExpiresAt), change_id: id })
          .execute();
      }
      return id;
    };
    const ids = {
      oldBare: await change(now - 72 * HOUR),
      oldWithExpiredToken: await change(now - 72 * HOUR, now - 48 * HOUR),
      oldWithLiveToken: await change(now - 72 * HOUR, now + HOUR),
      recentBare: await change(now - HOUR),
    };
    const left = async () =>
      new Set((await db.selectFrom('email_changes').select('id').where('id', 'in', Object.values(ids)).execute()).map((r) => r.id));
    // the expired token still names its change: only the bare old one goes
    assert.equal(await purgeSettledEmailChanges(db, retentionCutoff(1)!), 1);
    assert.deepEqual(await left(), new Set([ids.oldWithExpiredToken, ids.oldWithLiveToken, ids.recentBare]));
    assert.ok((await purgeExpiredEmailTokens(db, retentionCutoff(1)!)) >= 1);
    assert.equal(await purgeSettledEmailChanges(db, retentionCutoff(1)!), 1);
    assert.deepEqual(await left(), new Set([ids.oldWithLiveToken, ids.recentBare]));
  });

  it('an API-only process registers no schedule and runs no worker', async (t) => {
    const api = await buildTestApp(t, { role: 'api' });
    assert.deepEqual(await api.ctx.queue.boss.getSchedules('refresh-tokens-purge'), []);
  });
});
