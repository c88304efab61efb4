import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { api, buildTestApp, createUser, errorBody, type TestUser } from '../../helpers/app.ts';
import { createProduct } from '../../helpers/products.ts';
import { waitForFinal } from '../../helpers/orders.ts';
import { pendingOrder } from './cancel.helpers.ts';

const HEADER = 'id,status,total_amount,currency,customer_id,customer_email,customer_name,source,external_id,failure_reason,created_at,updated_at';

/** RFC 4180 records: quoted cells may hold commas, doubled quotes and line breaks; each record ends with CRLF. */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted && c === '"' && text[i + 1] === '"') {
      cell += '"';
      i++;
    } else if (c === '"') {
      quoted = !quoted;
    } else if (!quoted && c === ',') {
      record.push(cell);
      cell = '';
    } else if (!quoted && c === '\r' && text[i + 1] === '\n') {
      record.push(cell);
      records.push(record);
      record = [];
      cell = '';
      i++;
    } else {
      cell += c;
    }
  }
  assert.equal(cell + record.join(''), '', 'the last record ends with CRLF');
  return records;
}

describe('GET /api/v2/admin/orders/export', () => {
  let app: FastifyInstance;
  let admin: TestUser;
  let quoted: TestUser;
  let bulk: TestUser;
  let completedId: number;

  const exported = async (query = '') => {
    const res = await api(app, admin, { method: 'GET', url: `/api/v2/admin/orders/export${query}` });
    assert.equal(res.statusCode, 200, `${query}: ${res.body.slice(0, 300)}`);
    return { res, records: parseCsv(res.body) };
  };
  const listIds = async (query: string) => {
    const res = await api(app, admin, { method: 'GET', url: `/api/v2/admin/orders?page_size=100${query}` });
    return res.json<{ items: { id: number }[] }>().items.map((o) => String(o.id));
  };

  before(async () => {
    app = await buildTestApp(undefined, { currency: 'EUR' });
    admin = await createUser(app, { admin: true, login: false });
    quoted = await createUser(app, { email: 'quoted@example.com', fullName: 'Doe, "Jane"\nthe second', login: false });
    bulk = await createUser(app, { email: 'bulk@example.com', fullName: 'Bulk Buyer', login: false });
    const product = await createProduct(app, { price: '12.50', stock: 100 });
    const res = await api(app, quoted, { method: 'POST', url: '/api/v2/orders', payload: { items: [{ product_id: product.id, quantity: 2 }], shipping_address: '1 Main St' } });
    completedId = (await waitForFinal(app, res.json<{ id: number }>().id)).id;
    await pendingOrder(app, quoted, [{ productId: product.id, quantity: 1 }]);
    // cells a spreadsheet would run as formulas: platform orders' external ids
    for (const [n, externalId] of ['=1+2', '+SUM(A1)', '-3', '@cmd', '\tTab', '\rCR', 'plain'].entries()) {
      await app.ctx.db
        .insertInto('orders')
        .values({ user_id: bulk.user.id, status: 'failed', total_amount: '0', shipping_address: `${n} Formula St`, failure_reason: 'PRODUCT_UNAVAILABLE', source: 'shopify', external_id: externalId })
        .execute();
    }
    // 2,100 orders in one statement: one created_at for all (the keyset's ties are broken by id), more than two batches
    await sql`
      INSERT INTO orders (user_id, status, total_amount, shipping_address)
      SELECT ${bulk.user.id}, 'completed', 1.5, g || ' Bulk St' FROM generate_series(1, 2100) AS g
    `.execute(app.ctx.db);
  });

  it('401 without a token, 403 to a non-administrator, 422 for a bad filter; not in v1', async () => {
    assert.equal((await api(app, null, { method: 'GET', url: '/api/v2/admin/orders/export' })).statusCode, 401);
    assert.equal((await api(app, quoted, { method: 'GET', url: '/api/v2/admin/orders/export' })).statusCode, 403);
    for (const query of ['?created_from=yesterday', '?created_from=2026-02-01&created_to=2026-01-01', '?status=lost', '?q=']) {
      const res = await api(app, admin, { method: 'GET', url: `/api/v2/admin/orders/export${query}` });
      assert.equal(res.statusCode, 422, `${query}: ${res.body}`);
      assert.equal(errorBody(res).error_code, 'VALIDATION_ERROR');
    }
    assert.notEqual((await api(app, admin, { method: 'GET', url: '/api/v1/admin/orders/export' })).statusCode, 200);
  });

  it('is a CSV attachment with the header row, every order newest first, streamed over several batches', async () => {
    const { res, records } = await exported();
    assert.equal(res.headers['content-type'], 'text/csv; charset=utf-8');
    assert.match(String(res.headers['content-disposition']), /^attachment; filename="orders-\d{8}T\d{6}Z\.csv"$/);
    assert.equal(res.headers['content-length'], undefined, 'streamed, not measured first');
    assert.equal(res.body.split('\r\n')[0], HEADER);
    const ids = records.slice(1).map((r) => Number(r[0]));
    assert.equal(ids.length, 2 + 7 + 2100);
    assert.equal(new Set(ids).size, ids.length, 'no order twice across the batches');
    const created = records.slice(1).map((r) => Date.parse(r[10]));
    assert.ok(created.every((t, i) => i === 0 || t <= created[i - 1]), 'newest first');
    const bulkIds = records.slice(1).filter((r) => r[4] === String(bulk.user.id) && r[7] === 'api').map((r) => Number(r[0]));
    assert.deepEqual(bulkIds, [...bulkIds].sort((a, b) => b - a), 'ties on created_at by id, descending');
  });

  it("writes each field as the API reads it: exact totals in the currency, the customer, quoting of commas, quotes and line breaks", async () => {
    const { records } = await exported(`?q=quoted`);
    assert.deepEqual(records[0], HEADER.split(','));
    const row = records.find((r) => r[0] === String(completedId))!;
    const fields = Object.fromEntries(HEADER.split(',').map((h, i) => [h, row[i]]));
    assert.deepEqual(
      { ...fields, created_at: undefined, updated_at: undefined },
      {
        id: String(completedId),
        status: 'completed',
        total_amount: '25.00',
        currency: 'EUR',
        customer_id: String(quoted.user.id),
        customer_email: 'quoted@example.com',
        customer_name: 'Doe, "Jane"\nthe second',
        source: 'api',
        external_id: '',
        failure_reason: '',
        created_at: undefined,
        updated_at: undefined,
      },
    );
    assert.ok(!Number.isNaN(Date.parse(fields.created_at)) && !Number.isNaN(Date.parse(fields.updated_at)));
    assert.equal(records.length, 3);
  });

  it('prefixes a cell a spreadsheet would run as a formula with an apostrophe', async () => {
    const { res, records } = await exported('?source=platform');
    const external = records.slice(1).map((r) => r[8]).sort();
    assert.deepEqual(external, ["'\tTab", "'\rCR", "'+SUM(A1)", "'-3", "'=1+2", "'@cmd", 'plain'].sort());
    assert.ok(res.body.includes('"\'\rCR"'), 'a cell with a carriage return is quoted');
    assert.ok(records.slice(1).every((r) => r[7] === 'platform' && r[1] === 'failed' && r[9] === 'PRODUCT_UNAVAILABLE'));
  });

  it("applies the list's filters: the same orders as the list, and none for a filter nothing matches", async () => {
    for (const query of ['&status=pending', '&q=quoted', `&user_id=${quoted.user.id}`, '&customer_email=QUOTED%40example.com', '&source=platform&status=failed']) {
      const { records } = await exported(`?${query.slice(1)}`);
      assert.deepEqual(records.slice(1).map((r) => r[0]), await listIds(query), query);
    }
    for (const query of ['?q=nobody', '?customer_email=nobody%40example.com', '?q=99999999999', '?created_to=2001-01-01']) {
      const { res, records } = await exported(query);
      assert.deepEqual(records, [HEADER.split(',')], query);
      assert.equal(res.body, `${HEADER}\r\n`);
    }
  });
});
