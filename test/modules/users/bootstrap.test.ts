import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../../src/app-context.ts';
import { bootstrapAdmin } from '../../../src/modules/users/admin-bootstrap.ts';
import type { Config } from '../../../src/config.ts';
import { buildTestApp, createUser } from '../../helpers/app.ts';

function withConfig(app: FastifyInstance, overrides: Partial<Config>): AppContext {
  return { ...app.ctx, config: Object.freeze({ ...app.ctx.config, ...overrides }) };
}

/** The context with a logger that records warnings. */
function withWarnings(ctx: AppContext): { ctx: AppContext; warnings: string[] } {
  const warnings: string[] = [];
  const log = Object.create(ctx.log) as AppContext['log'];
  log.warn = ((...args: unknown[]) => {
    warnings.push(args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' '));
  }) as AppContext['log']['warn'];
  return { ctx: { ...ctx, log }, warnings };
}

/** Runs fn while capturing what is written to stdout. */
async function captureStdout(fn: () => Promise<void>): Promise<string> {
  const original = process.stdout.write.bind(process.stdout);
  let out = '';
  process.stdout.write = ((chunk: string | Uint8Array) => {
    out += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
    return true;
  }) as typeof process.stdout.write;
  try {
    await fn();
  } finally {
    process.stdout.write = original;
  }
  return out;
}

const admins = (app: FastifyInstance) =>
  app.ctx.db.selectFrom('users').selectAll().where('is_admin', '=', true).where('deleted_at', 'is', null).execute();

const login = (app: FastifyInstance, username: string, password: string) =>
  app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username, password } });

describe('administrator bootstrap', () => {
  it('ADMIN_EMAIL/ADMIN_PASSWORD: created once, then left alone (idempotent, never overwritten)', async (t) => {
    const app = await buildTestApp(t);
    const ctx = withConfig(app, { adminEmail: 'Boss@Example.com', adminPassword: 'boss-password-1' });
    const out = await captureStdout(() => bootstrapAdmin(ctx));
    assert.equal(out, '', 'a chosen password is never printed');
    const [admin] = await admins(app);
    assert.equal(admin.email, 'Boss@Example.com');
    assert.equal(admin.is_active, true);
    assert.equal((await login(app, 'boss@example.com', 'boss-password-1')).statusCode, 200);

    // a second start with another password does not touch the account
    await bootstrapAdmin(withConfig(app, { adminEmail: 'boss@example.com', adminPassword: 'another-password' }));
    await bootstrapAdmin(ctx);
    const after = await admins(app);
    assert.equal(after.length, 1);
    assert.equal(after[0].password_hash, admin.password_hash);
    assert.equal((await login(app, 'boss@example.com', 'another-password')).statusCode, 401);
  });

  it('ADMIN_EMAIL of an existing user: nothing is created or changed, and a warning says so', async (t) => {
    const app = await buildTestApp(t);
    const someone = await createUser(app);
    const { ctx, warnings } = withWarnings(withConfig(app, { adminEmail: someone.email, adminPassword: 'boss-password-1' }));
    await bootstrapAdmin(ctx);
    assert.deepEqual(await admins(app), []);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /not an administrator/);
    const row = await app.ctx.db.selectFrom('users').selectAll().where('id', '=', someone.user.id).executeTakeFirstOrThrow();
    assert.equal(row.password_hash, someone.user.password_hash);
  });

  it('ADMIN_EMAIL is created even when another administrator exists', async (t) => {
    const app = await buildTestApp(t);
    await createUser(app, { admin: true });
    await bootstrapAdmin(withConfig(app, { adminEmail: 'second.admin@example.com', adminPassword: 'boss-password-1' }));
    assert.equal((await admins(app)).length, 2);
  });

  it('neither set and no administrator: admin@example.com with a random password printed once, which works', async (t) => {
    const app = await buildTestApp(t);
    const out = await captureStdout(() => bootstrapAdmin(app.ctx));
    const match = /Administrator account created: admin@example\.com \/ (\S+)/.exec(out);
    assert.ok(match, `printed: ${out}`);
    const password = match[1];
    assert.ok(password.length >= 16);
    const [admin] = await admins(app);
    assert.equal(admin.email, 'admin@example.com');
    const res = await login(app, 'admin@example.com', password);
    assert.equal(res.statusCode, 200);
    const me = await app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Bearer ${res.json().access_token}` } });
    assert.equal(me.json().is_admin, true);

    // second start: an administrator exists, so nothing is created and nothing printed
    const again = await captureStdout(() => bootstrapAdmin(app.ctx));
    assert.equal(again, '');
    assert.equal((await admins(app)).length, 1);
  });

  it('neither set but an administrator exists: nothing happens', async (t) => {
    const app = await buildTestApp(t);
    const existing = await createUser(app, { admin: true });
    const out = await captureStdout(() => bootstrapAdmin(app.ctx));
    assert.equal(out, '');
    const list = await admins(app);
    assert.deepEqual(list.map((u) => u.id), [existing.user.id]);
  });

  it('a deleted administrator does not count: a new default admin is created', async (t) => {
    const app = await buildTestApp(t);
    const old = await createUser(app, { admin: true });
    await app.ctx.db.updateTable('users').set({ deleted_at: new Date(), is_active: false }).where('id', '=', old.user.id).execute();
    await app.ctx.userCache.settle(); // the change reaches the user cache through its NOTIFY
    const out = await captureStdout(() => bootstrapAdmin(app.ctx));
    assert.match(out, /admin@example\.com/);
    assert.equal((await admins(app)).length, 1);
  });

  it('no administrator and admin@example.com taken by a regular user: nothing created, a warning', async (t) => {
    const app = await buildTestApp(t);
    await createUser(app, { email: 'admin@example.com' });
    const { ctx, warnings } = withWarnings(app.ctx);
    const out = await captureStdout(() => bootstrapAdmin(ctx));
    assert.equal(out, '', 'no password printed for an account that was not created');
    assert.deepEqual(await admins(app), []);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /ADMIN_EMAIL and ADMIN_PASSWORD/);
  });

  it('two instances starting at once create one administrator', async (t) => {
    const app = await buildTestApp(t);
    const ctx = withConfig(app, { adminEmail: 'race.admin@example.com', adminPassword: 'boss-password-1' });
    await Promise.all([bootstrapAdmin(ctx), bootstrapAdmin(ctx)]);
    assert.equal((await admins(app)).length, 1);
  });
});
