import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { compileOnce } from '../../src/db/compiled.ts';
import { buildTestApp } from '../helpers/app.ts';

/** A test app's database with products `<prefix>-0`, `-1`, `-2` of stock 10, 20 and 30; the second inactive. */
async function withProducts(t: TestContext, prefix: string) {
  const db = (await buildTestApp(t)).ctx.db;
  await db
    .insertInto('products')
    .values([10, 20, 30].map((stock, i) => ({ sku: `${prefix}-${i}`, name: `p${i}`, price: '1.00', stock, is_active: i !== 1 })))
    .execute();
  return db;
}

describe('compileOnce', () => {
  it('compiles once and runs each call with its own arguments, in a transaction too', async (t) => {
    const db = await withProducts(t, 'CMP');
    let builds = 0;
    const inStock = compileOnce((q, a: { min: number; sku: string; limit: number }) => {
      builds++;
      return q
        .selectFrom('products')
        .select(['sku', 'stock'])
        .where('stock', '>=', a.min)
        .where('sku', 'like', a.sku)
        .orderBy('stock')
        .limit(a.limit);
    });
    assert.deepEqual(await inStock(db, { min: 15, sku: 'CMP-%', limit: 10 }), [
      { sku: 'CMP-1', stock: 20 },
      { sku: 'CMP-2', stock: 30 },
    ]);
    assert.deepEqual(await inStock(db, { min: 0, sku: 'CMP-%', limit: 1 }), [{ sku: 'CMP-0', stock: 10 }]);
    const inTrx = await db.transaction().execute((trx) => inStock(trx, { min: 25, sku: 'CMP-2', limit: 5 }));
    assert.deepEqual(inTrx, [{ sku: 'CMP-2', stock: 30 }]);
    assert.equal(builds, 1);
  });

  it('refuses an argument that did not become a parameter, rather than run a wrong statement', async (t) => {
    const app = await buildTestApp(t);
    // `a.status` is inspected, not used as a value: the stand-in is truthy, so a compiled statement
    // would silently filter on nothing for every later call
    const branchy = compileOnce((q, a: { status: string }) => {
      const base = q.selectFrom('orders').select('id');
      return a.status ? base : base.where('status', '=', 'pending');
    });
    await assert.rejects(branchy(app.ctx.db, { status: 'pending' }), /status did not become query parameters/);
  });
});
