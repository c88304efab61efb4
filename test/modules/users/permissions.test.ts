import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { SignJWT } from 'jose';
import { buildTestApp, createUser, errorBody, type TestUser } from '../../helpers/app.ts';

const SECRET = 'permission-matrix-secret-of-32-bytes-or-more';
const ISSUER = 'order-account-service';

const NOT_AUTHENTICATED = { detail: 'Not authenticated', error_code: 'NOT_AUTHENTICATED' };
const CREDENTIALS = { detail: 'Could not validate credentials', error_code: 'INVALID_TOKEN' };
const INACTIVE = { detail: 'Inactive user', error_code: 'INACTIVE_USER' };
const CREATE_ADMIN = { detail: 'Only administrators can create users', error_code: 'ADMIN_REQUIRED' };
const DELETE_ADMIN = { detail: 'Only administrators can delete users', error_code: 'ADMIN_REQUIRED' };
const UPDATE_OTHER = { detail: 'Not enough permissions to update this user', error_code: 'FORBIDDEN' };

type Operation = 'create' | 'list' | 'read' | 'update' | 'delete';
type Actor =
  | 'admin'
  | 'self'
  | 'other user'
  | 'inactive user'
  | 'inactive admin'
  | 'deleted user'
  | 'no token'
  | 'expired token'
  | 'refresh token'
  | 'token signed with another key'
  | 'alg none'
  | 'token of a user that never existed';

type Expected = number | { status: number; body: object };

const OPS: Operation[] = ['create', 'list', 'read', 'update', 'delete'];

/** The spec's permission matrix for /users (5 and 4.2), with DESIGN §4's details. */
const MATRIX: Record<Actor, Record<Operation, Expected>> = {
  admin: { create: 201, list: 200, read: 200, update: 200, delete: 204 },
  self: {
    create: { status: 403, body: CREATE_ADMIN },
    list: 200,
    read: 200,
    update: 200,
    delete: { status: 403, body: DELETE_ADMIN },
  },
  'other user': {
    create: { status: 403, body: CREATE_ADMIN },
    list: 200,
    read: 200,
    update: { status: 403, body: UPDATE_OTHER },
    delete: { status: 403, body: DELETE_ADMIN },
  },
  'inactive user': all(403, INACTIVE),
  'inactive admin': all(403, INACTIVE),
  'deleted user': all(401, CREDENTIALS),
  'no token': all(401, NOT_AUTHENTICATED),
  'expired token': all(401, CREDENTIALS),
  'refresh token': all(401, CREDENTIALS),
  'token signed with another key': all(401, CREDENTIALS),
  'alg none': all(401, CREDENTIALS),
  'token of a user that never existed': all(401, CREDENTIALS),
};

function all(status: number, body: object): Record<Operation, Expected> {
  return Object.fromEntries(OPS.map((op) => [op, { status, body }])) as Record<Operation, Expected>;
}

async function sign(key: Uint8Array, sub: number, exp: number, iat = Math.floor(Date.now() / 1000)): Promise<string> {
  return new SignJWT({ typ: 'access' })
    .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt' })
    .setSubject(String(sub))
    .setIssuer(ISSUER)
    .setAudience(ISSUER)
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .setJti(crypto.randomUUID())
    .sign(key);
}

describe('permission matrix of /users', () => {
  let app: FastifyInstance;
  let admin: TestUser;
  let other: TestUser;
  const key = new TextEncoder().encode(SECRET);
  let emailSeq = 0;

  before(async () => {
    app = await buildTestApp(undefined, { jwtSecret: SECRET });
    admin = await createUser(app, { admin: true });
    other = await createUser(app);
  });
  after(() => app.close());

  /** The Authorization header for an actor; the target is the user the request is about. */
  async function authorization(actor: Actor, target: TestUser): Promise<string | undefined> {
    const now = Math.floor(Date.now() / 1000);
    switch (actor) {
      case 'admin':
        return admin.auth.authorization;
      case 'self':
        return target.auth.authorization;
      case 'other user':
        return other.auth.authorization;
      case 'inactive user':
        return (await createUser(app, { active: false })).auth.authorization;
      case 'inactive admin':
        return (await createUser(app, { admin: true, active: false })).auth.authorization;
      case 'deleted user': {
        const u = await createUser(app, { admin: true });
        await app.ctx.db.updateTable('users').set({ deleted_at: new Date(), is_active: false }).where('id', '=', u.user.id).execute();
        await app.ctx.userCache.settle(); // the change reaches the user cache through its NOTIFY
        return u.auth.authorization;
      }
      case 'no token':
        return undefined;
      case 'expired token':
        return `Bearer ${await sign(key, admin.user.id, now - 30, now - 1830)}`;
      case 'refresh token':
        return `Bearer ${admin.refreshToken}`;
      case 'token signed with another key':
        return `Bearer ${await sign(new TextEncoder().encode('x'.repeat(48)), admin.user.id, now + 600)}`;
      case 'alg none': {
        const enc = (v: object) => Buffer.from(JSON.stringify(v)).toString('base64url');
        const claims = { typ: 'access', sub: String(admin.user.id), iss: ISSUER, aud: ISSUER, iat: now, exp: now + 600, jti: crypto.randomUUID() };
        return `Bearer ${enc({ alg: 'none', typ: 'at+jwt' })}.${enc(claims)}.`;
      }
      case 'token of a user that never existed':
        return `Bearer ${await sign(key, 2000000000, now + 600)}`;
      default: {
        const never: never = actor;
        throw new Error(`unknown actor ${String(never)}`);
      }
    }
  }

  function request(op: Operation, target: TestUser): InjectOptions {
    switch (op) {
      case 'create':
        return { method: 'POST', url: '/api/v1/users', payload: { email: `matrix${++emailSeq}@example.com`, full_name: 'Matrix', password: 'password123' } };
      case 'list':
        return { method: 'GET', url: '/api/v1/users' };
      case 'read':
        return { method: 'GET', url: `/api/v1/users/${target.user.id}` };
      case 'update':
        return { method: 'PATCH', url: `/api/v1/users/${target.user.id}`, payload: { full_name: 'Changed By Matrix' } };
      case 'delete':
        return { method: 'DELETE', url: `/api/v1/users/${target.user.id}` };
      default: {
        const never: never = op;
        throw new Error(`unknown operation ${String(never)}`);
      }
    }
  }

  async function snapshot(target: TestUser) {
    const row = await app.ctx.db.selectFrom('users').selectAll().where('id', '=', target.user.id).executeTakeFirstOrThrow();
    const count = await app.ctx.db.selectFrom('users').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
    return { row, count: Number(count.n) };
  }

  for (const actor of Object.keys(MATRIX) as Actor[]) {
    for (const op of OPS) {
      const expected = MATRIX[actor][op];
      const status = typeof expected === 'number' ? expected : expected.status;
      it(`${actor} → ${op}: ${status}`, async () => {
        const target = await createUser(app);
        const header = await authorization(actor, target);
        const before = await snapshot(target);
        const opts = request(op, target);
        const res = await app.inject({ ...opts, headers: header ? { authorization: header } : {} });
        assert.equal(res.statusCode, status, res.body);
        const after = await snapshot(target);
        if (typeof expected !== 'number') {
          assert.deepEqual(errorBody(res), expected.body);
          assert.deepEqual(after, before, 'a refused request changes nothing');
          if (status === 401) assert.equal(res.headers['www-authenticate'], 'Bearer');
          return;
        }
        // the allowed outcomes really happened
        switch (op) {
          case 'create':
            assert.equal(after.count, before.count + 1);
            break;
          case 'list':
            assert.ok(res.json().items.length > 0);
            break;
          case 'read':
            assert.equal(res.json().id, target.user.id);
            break;
          case 'update':
            assert.equal(after.row.full_name, 'Changed By Matrix');
            break;
          case 'delete':
            assert.ok(after.row.deleted_at instanceof Date);
            break;
          default:
            break;
        }
      });
    }
  }

  it('an admin acting on their own account: read and rename yes; delete, deactivate, demote no', async () => {
    const me = await createUser(app, { admin: true });
    const send = (opts: InjectOptions) => app.inject({ ...opts, headers: me.auth });
    assert.equal((await send({ method: 'GET', url: `/api/v1/users/${me.user.id}` })).statusCode, 200);
    assert.equal((await send({ method: 'PATCH', url: `/api/v1/users/${me.user.id}`, payload: { full_name: 'Me' } })).statusCode, 200);
    assert.equal((await send({ method: 'DELETE', url: `/api/v1/users/${me.user.id}` })).statusCode, 403);
    assert.equal((await send({ method: 'PATCH', url: `/api/v1/users/${me.user.id}`, payload: { is_active: false } })).statusCode, 403);
    assert.equal((await send({ method: 'PATCH', url: `/api/v1/users/${me.user.id}`, payload: { is_admin: false } })).statusCode, 403);
    const row = await app.ctx.db.selectFrom('users').selectAll().where('id', '=', me.user.id).executeTakeFirstOrThrow();
    assert.deepEqual([row.is_admin, row.is_active, row.deleted_at, row.full_name], [true, true, null, 'Me']);
  });
});
