import assert from 'node:assert/strict';
import { describe, it, before, after } from 'node:test';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { listOwnItemsJson } from '../../../src/modules/items/items.repository.ts';
import { toItem } from '../../../src/modules/items/items.mapper.ts';
import { api, buildTestApp, createUser } from '../../helpers/app.ts';
import { instantWithMicros, pgText } from '../../helpers/rendering.ts';

const text = pgText(30);
const item = fc.record({
  name: text,
  description: fc.option(text, { nil: null }),
  price: fc.oneof(fc.double({ min: 1e-4, max: 1e12, noNaN: true }), fc.constantFrom(0.01, 19.99, 1e12, 1e-4, 123456789.123)),
  is_active: fc.boolean(),
  created_at: instantWithMicros,
});

describe('items rendered to JSON by PostgreSQL', () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestApp(undefined);
  });
  after(() => app.close());

  it('is byte for byte the text of toItem through JSON.stringify, for any item', async () => {
    const db = app.ctx.db;
    await fc.assert(
      fc.asyncProperty(fc.array(item, { maxLength: 6 }), async (items) => {
        const owner = await createUser(app, { login: false });
        for (const i of items) {
          await db
            .insertInto('items')
            .values({ user_id: owner.user.id, name: i.name, description: i.description, price: i.price, is_active: i.is_active, created_at: i.created_at as never })
            .execute();
        }
        const rows = await db.selectFrom('items').selectAll().where('user_id', '=', owner.user.id).orderBy('id').execute();
        const json = await listOwnItemsJson(db, { userId: owner.user.id, limit: 100, offset: 0, isActive: undefined });
        assert.equal(json, JSON.stringify(rows.map(toItem)));
      }),
      { numRuns: 40 },
    );
  });

  it('writes a price below 0.0001 as the same number, in exponent form', async () => {
    // PostgreSQL writes a float8 under 1e-4 as 1e-05 where JSON.stringify writes 0.00001
    const db = app.ctx.db;
    const owner = await createUser(app, { login: false });
    await fc.assert(
      fc.asyncProperty(fc.double({ min: Number.MIN_VALUE, max: 1e-4, noNaN: true }), async (price) => {
        const { id } = await db.insertInto('items').values({ user_id: owner.user.id, name: 'tiny', price }).returning('id').executeTakeFirstOrThrow();
        const json = await listOwnItemsJson(db, { userId: owner.user.id, limit: 1, offset: 0, isActive: undefined });
        const [row] = await db.selectFrom('items').selectAll().where('id', '=', id).execute();
        assert.deepEqual(JSON.parse(json), [toItem(row)]);
        await db.deleteFrom('items').where('id', '=', id).execute();
      }),
      { numRuns: 30 },
    );
  });

  it('filters, pages and leaves out deleted items as the query asks', async () => {
    const owner = await createUser(app);
    const other = await createUser(app);
    const create = async (who: typeof owner, name: string, isActive: boolean) => {
      const res = await api(app, who, { method: 'POST', url: '/api/v1/items', payload: { name, price: 1.5, is_active: isActive } });
      assert.equal(res.statusCode, 201, res.body);
      return res.json<{ id: number }>().id;
    };
    const ids = [];
    for (let n = 0; n < 5; n++) ids.push(await create(owner, `i${n}`, n % 2 === 0));
    await create(other, 'theirs', true);
    const gone = await api(app, owner, { method: 'DELETE', url: `/api/v1/items/${ids[2]}` });
    assert.equal(gone.statusCode, 204);

    const list = async (query: string) => {
      const res = await api(app, owner, { method: 'GET', url: `/api/v1/items${query}` });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
      return res.json<{ id: number; name: string }[]>().map((i) => i.name);
    };
    assert.deepEqual(await list(''), ['i0', 'i1', 'i3', 'i4']);
    assert.deepEqual(await list('?skip=1&limit=2'), ['i1', 'i3']);
    assert.deepEqual(await list('?is_active=true'), ['i0', 'i4']);
    assert.deepEqual(await list('?is_active=false&limit=1'), ['i1']);
    assert.deepEqual(await list('?skip=10'), []);
    const none = await api(app, await createUser(app), { method: 'GET', url: '/api/v1/items' });
    assert.equal(none.body, '[]');
  });
});
