import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, errorBody, type TestUser } from '../../helpers/app.ts';

interface Page {
  items: { id: number; email: string }[];
  total: number;
  has_next: boolean;
}

/**
 * Who reads which account. v2: an administrator reads everyone, anyone else only their own account
 * (another's is 404, as if it did not exist). v1 keeps the specification's rule: any signed-in user
 * lists and reads every user.
 */
describe('reading users: v2 shows a non-admin only their own account, v1 keeps the specification', () => {
  let app: FastifyInstance;
  let alice: TestUser;
  let bob: TestUser;
  let admin: TestUser;
  before(async () => {
    app = await buildTestApp(undefined);
    alice = await createUser(app);
    bob = await createUser(app);
    admin = await createUser(app, { admin: true });
  });
  after(() => app.close());

  const list = async (who: TestUser, url: string) => {
    const res = await api(app, who, { method: 'GET', url });
    assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
    return res.json<Page>();
  };

  it('v2: GET /users lists only the caller; GET /users/{id} of another is 404', async () => {
    const own = await list(alice, '/api/v2/users?page_size=100');
    assert.deepEqual(own.items.map((u) => u.id), [alice.user.id]);
    assert.equal(own.total, 1);
    assert.equal(own.has_next, false);
    // the filters and pages still apply to that one account
    assert.deepEqual((await list(alice, '/api/v2/users?is_active=false')).items, []);
    assert.equal((await list(alice, '/api/v2/users?is_active=false')).total, 0);
    assert.deepEqual((await list(alice, '/api/v2/users?page=2&page_size=1')).items, []);

    const mine = await api(app, alice, { method: 'GET', url: `/api/v2/users/${alice.user.id}` });
    assert.equal(mine.statusCode, 200, mine.body);
    for (const id of [bob.user.id, admin.user.id, 999999]) {
      const other = await api(app, alice, { method: 'GET', url: `/api/v2/users/${id}` });
      assert.equal(other.statusCode, 404, `user ${id}: ${other.body}`);
      assert.deepEqual(errorBody(other), { detail: 'User not found', error_code: 'NOT_FOUND' });
    }
  });

  it('v2: an administrator lists and reads everyone', async () => {
    const all = await list(admin, '/api/v2/users?page_size=100');
    for (const u of [alice, bob, admin]) assert.ok(all.items.some((i) => i.id === u.user.id), `user ${u.user.id} listed`);
    assert.ok(all.total >= 3);
    const res = await api(app, admin, { method: 'GET', url: `/api/v2/users/${bob.user.id}` });
    assert.equal(res.statusCode, 200, res.body);
  });

  it('v1: any signed-in user lists and reads every user (the specification)', async () => {
    const all = await list(alice, '/api/v1/users?page_size=100');
    for (const u of [alice, bob, admin]) assert.ok(all.items.some((i) => i.id === u.user.id), `user ${u.user.id} listed`);
    const res = await api(app, alice, { method: 'GET', url: `/api/v1/users/${bob.user.id}` });
    assert.equal(res.statusCode, 200, res.body);
  });

  it('the v2 document says so', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/openapi-v2.json' })).json<{ paths: Record<string, Record<string, { description?: string }>> }>();
    assert.match(doc.paths['/api/v2/users'].get.description ?? '', /anyone else lists only their own account/);
    assert.match(doc.paths['/api/v2/users/{user_id}'].get.description ?? '', /another user's is 404/);
  });
});
