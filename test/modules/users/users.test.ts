import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import bcrypt from 'bcrypt';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, errorBody, TEST_PASSWORD, type TestUser } from '../../helpers/app.ts';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const CREATED_KEYS = ['created_at', 'email', 'full_name', 'id', 'is_active', 'is_admin'];
const DETAIL_KEYS = ['created_at', 'email', 'full_name', 'id', 'is_active', 'is_admin', 'updated_at'];
const NOT_FOUND = { detail: 'User not found', error_code: 'NOT_FOUND' };
const CREDENTIALS = { detail: 'Could not validate credentials', error_code: 'INVALID_TOKEN' };

let seq = 0;
const newEmail = (tag = 'new') => `${tag}${++seq}-${Date.now().toString(36)}@example.com`;

describe('users', () => {
  let app: FastifyInstance;
  let admin: TestUser;
  let alice: TestUser;

  const userRow = (id: number) => app.ctx.db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
  const userCount = async () => Number((await app.ctx.db.selectFrom('users').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
  const post = (who: TestUser | null, payload: unknown) => api(app, who, { method: 'POST', url: '/api/v1/users', payload: payload as object });
  const patch = (who: TestUser | null, id: number | string, payload: unknown) =>
    api(app, who, { method: 'PATCH', url: `/api/v1/users/${id}`, payload: payload as object });
  const get = (who: TestUser | null, id: number | string) => api(app, who, { method: 'GET', url: `/api/v1/users/${id}` });
  const del = (who: TestUser | null, id: number | string) => api(app, who, { method: 'DELETE', url: `/api/v1/users/${id}` });
  const login = (username: string, password: string) =>
    app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username, password } });

  before(async () => {
    app = await buildTestApp(undefined);
    admin = await createUser(app, { admin: true });
    alice = await createUser(app);
  });
  after(() => app.close());

  describe('POST /users', () => {
    it('creates a user: 201 with exactly the spec fields; stored hashed; can sign in', async () => {
      const email = newEmail('Mixed.Case');
      const res = await post(admin, { email, full_name: 'New Person', password: 'password123' });
      assert.equal(res.statusCode, 201, res.body);
      const body = res.json();
      assert.deepEqual(Object.keys(body).sort(), CREATED_KEYS);
      assert.equal(typeof body.id, 'number');
      assert.equal(body.email, email);
      assert.equal(body.full_name, 'New Person');
      assert.equal(body.is_active, true);
      assert.equal(body.is_admin, false);
      assert.match(body.created_at, ISO);
      assert.ok(!res.body.includes('password'), 'no password or hash in the response');

      const row = await userRow(body.id);
      assert.ok(row);
      assert.equal(row.email, email);
      assert.match(row.password_hash!, /^\$2[aby]\$\d{2}\$/);
      assert.ok(await bcrypt.compare('password123', row.password_hash!));
      assert.equal(row.deleted_at, null);
      assert.equal(row.created_at.toISOString(), body.created_at);

      assert.equal((await login(email, 'password123')).statusCode, 200);
    });

    it('a duplicate e-mail (any case) is 400 EMAIL_EXISTS and creates nothing', async () => {
      const count = await userCount();
      for (const email of [alice.email, alice.email.toUpperCase(), alice.email[0].toUpperCase() + alice.email.slice(1)]) {
        const res = await post(admin, { email, full_name: 'Dup', password: 'password123' });
        assert.equal(res.statusCode, 400, email);
        assert.deepEqual(errorBody(res), { detail: 'Email already registered', error_code: 'EMAIL_EXISTS' });
      }
      assert.equal(await userCount(), count);
    });

    it('two concurrent creations with one e-mail: one 201, one 400 EMAIL_EXISTS, one row', async () => {
      const email = newEmail('race');
      const [a, b] = await Promise.all([
        post(admin, { email, full_name: 'Racer A', password: 'password123' }),
        post(admin, { email: email.toUpperCase(), full_name: 'Racer B', password: 'password123' }),
      ]);
      assert.deepEqual([a.statusCode, b.statusCode].sort(), [201, 400]);
      const loser = a.statusCode === 400 ? a : b;
      assert.equal(errorBody(loser).error_code, 'EMAIL_EXISTS');
      const rows = await app.ctx.db.selectFrom('users').select('id').where((eb) => eb(eb.fn('lower', ['email']), '=', email.toLowerCase())).execute();
      assert.equal(rows.length, 1);
    });

    it('invalid input is 422 VALIDATION_ERROR with errors[] and creates nothing', async () => {
      const ok = { email: newEmail(), full_name: 'Valid Name', password: 'password123' };
      const cases: [string, unknown, (string | number)[]][] = [
        ['invalid e-mail', { ...ok, email: 'not-an-email' }, ['body', 'email']],
        ['e-mail without domain', { ...ok, email: 'someone@' }, ['body', 'email']],
        ['e-mail without local part', { ...ok, email: '@example.com' }, ['body', 'email']],
        ['e-mail with a space', { ...ok, email: 'some one@example.com' }, ['body', 'email']],
        ['password of 7 characters', { ...ok, password: '1234567' }, ['body', 'password']],
        ['password of 73 bytes', { ...ok, password: 'x'.repeat(73) }, ['body', 'password']],
        ['password of 37 characters but 74 bytes', { ...ok, password: 'é'.repeat(37) }, ['body', 'password']],
        ['empty full_name', { ...ok, full_name: '' }, ['body', 'full_name']],
        ['full_name of 101 characters', { ...ok, full_name: 'x'.repeat(101) }, ['body', 'full_name']],
        ['missing email', { full_name: ok.full_name, password: ok.password }, ['body', 'email']],
        ['missing full_name', { email: ok.email, password: ok.password }, ['body', 'full_name']],
        ['missing password', { email: ok.email, full_name: ok.full_name }, ['body', 'password']],
        ['unknown property is_admin', { ...ok, is_admin: true }, ['body', 'is_admin']],
        ['unknown property is_active', { ...ok, is_active: false }, ['body', 'is_active']],
        ['wrong type', { ...ok, full_name: 42 }, ['body', 'full_name']],
        ['not an object', [ok], ['body']],
      ];
      const count = await userCount();
      for (const [why, payload, loc] of cases) {
        const res = await post(admin, payload);
        assert.equal(res.statusCode, 422, `${why}: ${res.body}`);
        const body = errorBody(res);
        assert.equal(body.error_code, 'VALIDATION_ERROR', why);
        assert.ok(body.detail.startsWith('Validation failed'), why);
        assert.ok(Array.isArray(body.errors) && body.errors.length > 0, why);
        const first = body.errors[0] as { loc: unknown; msg: unknown; type: unknown };
        assert.deepEqual(first.loc, loc, why);
        assert.equal(typeof first.msg, 'string');
        assert.equal(typeof first.type, 'string');
      }
      assert.equal(await userCount(), count);
    });

    it('boundaries that are valid: 8-character password, 72-byte password, 100-character name', async () => {
      const cases = [
        { password: '12345678', full_name: 'Eight' },
        { password: 'x'.repeat(72), full_name: 'Seventy-two ASCII' },
        { password: 'é'.repeat(36), full_name: 'Seventy-two bytes' },
        { password: 'password123', full_name: 'n'.repeat(100) },
      ];
      for (const c of cases) {
        const email = newEmail('edge');
        const res = await post(admin, { email, ...c });
        assert.equal(res.statusCode, 201, res.body);
        assert.equal(res.json().full_name, c.full_name);
        assert.equal((await login(email, c.password)).statusCode, 200);
      }
    });

    it('the e-mail of a deleted user can be registered again', async () => {
      const gone = await createUser(app);
      assert.equal((await del(admin, gone.user.id)).statusCode, 204);
      const res = await post(admin, { email: gone.email, full_name: 'Second Life', password: 'password123' });
      assert.equal(res.statusCode, 201);
      assert.notEqual(res.json().id, gone.user.id);
    });

    it('no token 401; a non-admin 403 "Only administrators can create users"; checked before the body', async () => {
      const none = await post(null, { email: newEmail(), full_name: 'X', password: 'password123' });
      assert.equal(none.statusCode, 401);
      assert.deepEqual(errorBody(none), { detail: 'Not authenticated', error_code: 'NOT_AUTHENTICATED' });
      const count = await userCount();
      for (const payload of [{ email: newEmail(), full_name: 'X', password: 'password123' }, { email: 'bad' }]) {
        const res = await post(alice, payload);
        assert.equal(res.statusCode, 403);
        assert.deepEqual(errorBody(res), { detail: 'Only administrators can create users', error_code: 'ADMIN_REQUIRED' });
      }
      assert.equal((await post(null, { email: 'bad' })).statusCode, 401);
      assert.equal(await userCount(), count);
    });
  });

  describe('GET /users/{user_id}', () => {
    it('any signed-in user reads any user: exactly the detail fields', async () => {
      const res = await get(alice, admin.user.id);
      assert.equal(res.statusCode, 200);
      const body = res.json();
      assert.deepEqual(Object.keys(body).sort(), DETAIL_KEYS);
      assert.deepEqual(
        { id: body.id, email: body.email, full_name: body.full_name, is_active: body.is_active, is_admin: body.is_admin },
        { id: admin.user.id, email: admin.email, full_name: admin.user.full_name, is_active: true, is_admin: true },
      );
      assert.match(body.created_at, ISO);
      assert.equal(body.updated_at, null, 'never updated');
    });

    it('an unknown or deleted user is 404 "User not found"', async () => {
      const unknown = await get(alice, 987654);
      assert.equal(unknown.statusCode, 404);
      assert.deepEqual(errorBody(unknown), NOT_FOUND);
      const gone = await createUser(app);
      assert.equal((await del(admin, gone.user.id)).statusCode, 204);
      const deleted = await get(admin, gone.user.id);
      assert.equal(deleted.statusCode, 404);
      assert.deepEqual(errorBody(deleted), NOT_FOUND);
    });

    it('a malformed id is 422; an integer no user can have is 404 User not found', async () => {
      for (const id of ['abc', '1.5', '1x']) {
        const res = await get(alice, id);
        assert.equal(res.statusCode, 422, id);
        assert.equal(errorBody(res).error_code, 'VALIDATION_ERROR');
      }
      for (const id of ['0', '-1', '2147483648', '99999999999999999999']) {
        const res = await get(alice, id);
        assert.equal(res.statusCode, 404, id);
        assert.deepEqual(errorBody(res), { detail: 'User not found', error_code: 'NOT_FOUND' });
      }
    });
  });

  describe('PATCH /users/{user_id}', () => {
    it('changes only the given fields and sets updated_at; exactly the detail fields', async () => {
      const bob = await createUser(app, { fullName: 'Bob Original' });
      const before = (await userRow(bob.user.id))!;
      assert.equal(before.updated_at, null);

      const res = await patch(bob, bob.user.id, { full_name: 'Bob Renamed' });
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json();
      assert.deepEqual(Object.keys(body).sort(), DETAIL_KEYS);
      assert.equal(body.full_name, 'Bob Renamed');
      assert.equal(body.email, bob.email, 'omitted e-mail unchanged');
      assert.equal(body.is_active, true);
      assert.equal(body.is_admin, false);
      assert.equal(body.created_at, before.created_at.toISOString());
      assert.match(body.updated_at, ISO);

      const row = (await userRow(bob.user.id))!;
      assert.equal(row.full_name, 'Bob Renamed');
      assert.equal(row.email, before.email);
      assert.equal(row.password_hash, before.password_hash);
      assert.equal(row.updated_at?.toISOString(), body.updated_at);

      const newAddress = newEmail('bob');
      const res2 = await patch(bob, bob.user.id, { email: newAddress });
      assert.equal(res2.statusCode, 200);
      assert.equal(res2.json().email, newAddress);
      assert.equal(res2.json().full_name, 'Bob Renamed', 'omitted full_name unchanged');
      assert.ok(Date.parse(res2.json().updated_at) >= Date.parse(body.updated_at));
      assert.equal((await login(newAddress, TEST_PASSWORD)).statusCode, 200, 'signs in with the new address');
      assert.equal((await login(bob.email, TEST_PASSWORD)).statusCode, 401, 'not with the old one');

      const res3 = await patch(bob, bob.user.id, {});
      assert.equal(res3.statusCode, 200);
      assert.equal(res3.json().email, newAddress);
      assert.equal(res3.json().updated_at, res2.json().updated_at, 'an empty PATCH changes nothing, not even updated_at');
      assert.equal(res3.json().full_name, 'Bob Renamed');
    });

    it('an e-mail in use by another user (any case) is 400 EMAIL_EXISTS and changes nothing', async () => {
      const carol = await createUser(app);
      for (const email of [alice.email, alice.email.toUpperCase()]) {
        const res = await patch(carol, carol.user.id, { email, full_name: 'Should Not Stick' });
        assert.equal(res.statusCode, 400);
        assert.deepEqual(errorBody(res), { detail: 'Email already in use', error_code: 'EMAIL_EXISTS' });
      }
      const row = (await userRow(carol.user.id))!;
      assert.equal(row.email, carol.email);
      assert.equal(row.full_name, carol.user.full_name);
      assert.equal(row.updated_at, null);
    });

    it('the own e-mail in another case, or a deleted user\'s e-mail, is accepted', async () => {
      const dan = await createUser(app);
      const res = await patch(dan, dan.user.id, { email: dan.email.toUpperCase() });
      assert.equal(res.statusCode, 200);
      assert.equal(res.json().email, dan.email.toUpperCase());
      const gone = await createUser(app);
      assert.equal((await del(admin, gone.user.id)).statusCode, 204);
      const res2 = await patch(dan, dan.user.id, { email: gone.email });
      assert.equal(res2.statusCode, 200);
      assert.equal(res2.json().email, gone.email);
    });

    it('invalid input is 422 and changes nothing (no password, no unknown fields)', async () => {
      const erin = await createUser(app);
      const cases: [unknown, string][] = [
        [{ email: 'nope' }, 'email'],
        [{ full_name: '' }, 'full_name'],
        [{ full_name: 'x'.repeat(101) }, 'full_name'],
        [{ password: 'new-password-1' }, 'password'],
        [{ full_name: 'Ok Name', role: 'admin' }, 'role'],
        [{ is_active: 'false' }, 'is_active'],
        [{ full_name: null }, 'full_name'],
      ];
      for (const [payload, field] of cases) {
        const res = await patch(erin, erin.user.id, payload);
        assert.equal(res.statusCode, 422, JSON.stringify(payload));
        const body = errorBody(res);
        assert.equal(body.error_code, 'VALIDATION_ERROR');
        assert.deepEqual((body.errors?.[0] as { loc: unknown }).loc, ['body', field]);
      }
      const row = (await userRow(erin.user.id))!;
      assert.equal(row.full_name, erin.user.full_name);
      assert.equal(row.email, erin.email);
      assert.equal(row.updated_at, null);
      assert.equal((await login(erin.email, TEST_PASSWORD)).statusCode, 200);
    });

    it('a non-admin cannot set is_active or is_admin (403) — not even with other fields — and nothing changes', async () => {
      const fay = await createUser(app);
      for (const payload of [{ is_admin: true }, { is_active: false }, { full_name: 'Sneaky', is_admin: true }, { is_active: true }]) {
        const res = await patch(fay, fay.user.id, payload);
        assert.equal(res.statusCode, 403, JSON.stringify(payload));
        assert.deepEqual(errorBody(res), { detail: 'Only administrators can change is_active or is_admin', error_code: 'FORBIDDEN' });
      }
      const row = (await userRow(fay.user.id))!;
      assert.equal(row.is_admin, false);
      assert.equal(row.is_active, true);
      assert.equal(row.full_name, fay.user.full_name);
      assert.equal(row.updated_at, null);
    });

    it("a non-admin cannot update another user's profile (403) and nothing changes", async () => {
      const gus = await createUser(app);
      const res = await patch(alice, gus.user.id, { full_name: 'Hijacked' });
      assert.equal(res.statusCode, 403);
      assert.deepEqual(errorBody(res), { detail: 'Not enough permissions to update this user', error_code: 'FORBIDDEN' });
      assert.equal((await userRow(gus.user.id))!.full_name, gus.user.full_name);
    });

    it('an admin updates another user, including is_admin; the promoted user can then create users', async () => {
      const hal = await createUser(app);
      const address = newEmail('hal');
      const res = await patch(admin, hal.user.id, { full_name: 'Hal Admin', email: address, is_admin: true });
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(
        { full_name: res.json().full_name, email: res.json().email, is_admin: res.json().is_admin, is_active: res.json().is_active },
        { full_name: 'Hal Admin', email: address, is_admin: true, is_active: true },
      );
      const created = await post(hal, { email: newEmail(), full_name: 'By Hal', password: 'password123' });
      assert.equal(created.statusCode, 201, 'admin rights are read from the database on each request');
    });

    it('an admin cannot change is_active or is_admin on their own account, but may rename themselves', async () => {
      for (const payload of [{ is_admin: false }, { is_active: false }]) {
        const res = await patch(admin, admin.user.id, payload);
        assert.equal(res.statusCode, 403);
        assert.deepEqual(errorBody(res), {
          detail: 'Administrators cannot change is_active or is_admin on their own account',
          error_code: 'FORBIDDEN',
        });
      }
      const row = (await userRow(admin.user.id))!;
      assert.equal(row.is_admin, true);
      assert.equal(row.is_active, true);
      const res = await patch(admin, admin.user.id, { full_name: 'Chief Admin' });
      assert.equal(res.statusCode, 200);
      assert.equal(res.json().is_admin, true);
    });

    it('deactivation by an admin ends every session (refresh and access tokens); reactivation lets the user sign in again but revives no old token', async () => {
      const ivy = await createUser(app);
      const second = await login(ivy.email, TEST_PASSWORD);
      const res = await patch(admin, ivy.user.id, { is_active: false });
      assert.equal(res.statusCode, 200);
      assert.equal(res.json().is_active, false);
      const tokens = await app.ctx.db.selectFrom('refresh_tokens').selectAll().where('user_id', '=', ivy.user.id).execute();
      assert.equal(tokens.length, 2);
      assert.ok(tokens.every((t) => t.revoked_at !== null), 'all refresh tokens revoked');

      // while inactive, the specification's answer: 403 "Inactive user"
      const me = await api(app, ivy, { method: 'GET', url: '/api/v1/auth/me' });
      assert.equal(me.statusCode, 403);
      assert.deepEqual(errorBody(me), { detail: 'Inactive user', error_code: 'INACTIVE_USER' });
      const list = await api(app, ivy, { method: 'GET', url: '/api/v1/users' });
      assert.equal(list.statusCode, 403);
      const refreshed = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: second.json().refresh_token } });
      assert.equal(refreshed.statusCode, 401);
      const relogin = await login(ivy.email, TEST_PASSWORD);
      assert.equal(relogin.statusCode, 403);
      assert.deepEqual(errorBody(relogin), { detail: 'Inactive user', error_code: 'INACTIVE_USER' });

      const back = await patch(admin, ivy.user.id, { is_active: true });
      assert.equal(back.statusCode, 200);
      assert.equal(back.json().is_active, true);
      // finding 4: reactivation does not revive the tokens issued before the deactivation
      assert.equal((await api(app, ivy, { method: 'GET', url: '/api/v1/auth/me' })).statusCode, 401);
      const refreshedAfter = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: second.json().refresh_token } });
      assert.equal(refreshedAfter.statusCode, 401);
      const fresh = await login(ivy.email, TEST_PASSWORD);
      assert.equal(fresh.statusCode, 200);
      const mine = await app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Bearer ${fresh.json().access_token}` } });
      assert.equal(mine.statusCode, 200);
    });

    it('an unknown or deleted user is 404 for an admin', async () => {
      const res = await patch(admin, 987654, { full_name: 'Ghost' });
      assert.equal(res.statusCode, 404);
      assert.deepEqual(errorBody(res), NOT_FOUND);
      const gone = await createUser(app);
      assert.equal((await del(admin, gone.user.id)).statusCode, 204);
      const res2 = await patch(admin, gone.user.id, { full_name: 'Ghost' });
      assert.equal(res2.statusCode, 404);
      assert.deepEqual(errorBody(res2), NOT_FOUND);
      assert.equal((await userRow(gone.user.id))!.full_name, gone.user.full_name);
    });
  });

  describe('DELETE /users/{user_id}', () => {
    it('soft-deletes: 204 with an empty body; the row stays with deleted_at; tokens revoked; gone everywhere', async () => {
      const jay = await createUser(app);
      const res = await del(admin, jay.user.id);
      assert.equal(res.statusCode, 204);
      assert.equal(res.body, '');
      assert.equal(res.headers['content-type'], undefined);

      const row = await userRow(jay.user.id);
      assert.ok(row, 'the row is still there');
      assert.ok(row.deleted_at instanceof Date);
      assert.equal(row.is_active, false);
      const tokens = await app.ctx.db.selectFrom('refresh_tokens').selectAll().where('user_id', '=', jay.user.id).execute();
      assert.ok(tokens.length > 0 && tokens.every((t) => t.revoked_at !== null), 'refresh tokens revoked');

      assert.deepEqual(errorBody(await get(admin, jay.user.id)), NOT_FOUND);
      const list = await api(app, admin, { method: 'GET', url: '/api/v1/users?page_size=100' });
      assert.ok(!list.json().items.some((u: { id: number }) => u.id === jay.user.id), 'absent from the list');
      const relogin = await login(jay.email, TEST_PASSWORD);
      assert.equal(relogin.statusCode, 401);
      assert.equal(errorBody(relogin).error_code, 'INVALID_CREDENTIALS');
      const me = await api(app, jay, { method: 'GET', url: '/api/v1/auth/me' });
      assert.equal(me.statusCode, 401);
      assert.deepEqual(errorBody(me), CREDENTIALS);
      const refreshed = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: jay.refreshToken } });
      assert.equal(refreshed.statusCode, 401);

      const again = await del(admin, jay.user.id);
      assert.equal(again.statusCode, 404);
      assert.deepEqual(errorBody(again), NOT_FOUND);
    });

    it('a non-admin gets 403 and nothing changes; no token 401; unknown 404; malformed id 422', async () => {
      const kim = await createUser(app);
      for (const who of [alice, kim]) {
        const res = await del(who, kim.user.id);
        assert.equal(res.statusCode, 403);
        assert.deepEqual(errorBody(res), { detail: 'Only administrators can delete users', error_code: 'ADMIN_REQUIRED' });
      }
      const none = await del(null, kim.user.id);
      assert.equal(none.statusCode, 401);
      assert.equal(errorBody(none).error_code, 'NOT_AUTHENTICATED');
      const row = (await userRow(kim.user.id))!;
      assert.equal(row.deleted_at, null);
      assert.equal(row.is_active, true);

      const unknown = await del(admin, 987654);
      assert.equal(unknown.statusCode, 404);
      assert.deepEqual(errorBody(unknown), NOT_FOUND);
      assert.equal((await del(admin, 'abc')).statusCode, 422);
    });

    it('an admin cannot delete their own account (403)', async () => {
      const res = await del(admin, admin.user.id);
      assert.equal(res.statusCode, 403);
      assert.deepEqual(errorBody(res), { detail: 'Administrators cannot delete their own account', error_code: 'FORBIDDEN' });
      assert.equal((await userRow(admin.user.id))!.deleted_at, null);
    });
  });
});
