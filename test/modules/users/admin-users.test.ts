import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { api, buildTestApp, createUser, errorBody, type TestUser } from '../../helpers/app.ts';

const LIST = '/api/v1/admin/users';
const FIELDS = ['created_at', 'email', 'full_name', 'id', 'is_active', 'is_admin', 'updated_at'];

interface Page {
  items: { id: number; email: string; is_active: boolean; is_admin: boolean }[];
  total: number;
  page: number;
  page_size: number;
  has_next: boolean;
}

describe('admin user search: GET /admin/users', () => {
  let app: FastifyInstance;
  let admin: TestUser;
  let user: TestUser;
  const ids: number[] = [];

  const list = async (query: string, who: TestUser = admin) => {
    const res = await api(app, who, { method: 'GET', url: `${LIST}${query}` });
    assert.equal(res.statusCode, 200, `${query}: ${res.body}`);
    return res.json<Page>();
  };

  before(async () => {
    app = await buildTestApp(undefined);
    admin = await createUser(app, { admin: true, email: 'boss@admin-search.test', login: false });
    user = await createUser(app, { email: 'someone@elsewhere.test', login: false });
    for (const email of ['Jane.Doe@Acme-Search.test', 'john@acme-search.test', 'percent%under_score@acme-search.test']) {
      ids.push((await createUser(app, { email, login: false })).user.id);
    }
    await createUser(app, { email: 'gone@acme-search.test', active: false, login: false });
    const deleted = await createUser(app, { email: 'deleted@acme-search.test', login: false });
    assert.equal((await api(app, admin, { method: 'DELETE', url: `/api/v1/users/${deleted.user.id}` })).statusCode, 204);
  });
  after(() => app.close());

  it('finds the live users whose e-mail contains the text, in any case, ordered by id, each with its roles', async () => {
    const page = await list('?email=ACME-search');
    assert.equal(page.total, 4);
    assert.deepEqual(
      page.items.map((u) => u.email),
      ['Jane.Doe@Acme-Search.test', 'john@acme-search.test', 'percent%under_score@acme-search.test', 'gone@acme-search.test'],
    );
    assert.deepEqual(Object.keys(page.items[0]).sort(), FIELDS);
    assert.equal(page.items[0].is_admin, false);
    assert.equal((await list('?email=boss')).items[0].is_admin, true);
  });

  it('takes % and _ as plain characters', async () => {
    assert.deepEqual((await list('?email=t%25u')).items.map((u) => u.id), [ids[2]]);
    assert.deepEqual((await list('?email=r_s')).items.map((u) => u.id), [ids[2]]);
    assert.equal((await list('?email=%25')).total, 1);
  });

  it('filters by is_active and pages', async () => {
    assert.deepEqual((await list('?email=acme-search&is_active=false')).items.map((u) => u.email), ['gone@acme-search.test']);
    const first = await list('?email=acme-search&page_size=3');
    assert.equal(first.items.length, 3);
    assert.equal(first.has_next, true);
    const second = await list('?email=acme-search&page_size=3&page=2');
    assert.deepEqual(second.items.map((u) => u.email), ['gone@acme-search.test']);
    assert.equal(second.has_next, false);
    assert.ok((await list('')).total >= 6, 'without a search: every live user');
  });

  it('is for administrators only: 403 ADMIN_REQUIRED for a user; 422 for an empty search', async () => {
    const res = await api(app, user, { method: 'GET', url: `${LIST}?email=acme` });
    assert.equal(res.statusCode, 403);
    assert.equal(errorBody(res).error_code, 'ADMIN_REQUIRED');
    assert.equal((await api(app, admin, { method: 'GET', url: `${LIST}?email=` })).statusCode, 422);
  });
});
