import assert from 'node:assert/strict';
import { describe, it, before, after } from 'node:test';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import type { OrderStatus } from '../../../src/db/schema.ts';
import { pageJsonText, pageOf } from '../../../src/http/common.schemas.ts';
import { API_VERSIONS } from '../../../src/http/api-version.ts';
import { statusesFor, toOrderDetail, toOrderSummary } from '../../../src/modules/orders/orders.mapper.ts';
import { findOrderDetailJson, findOrderWithLines, listUserOrdersJson } from '../../../src/modules/orders/orders.reads.repository.ts';
import { buildTestApp, createUser } from '../../helpers/app.ts';
import { instantWithMicros, pgText } from '../../helpers/rendering.ts';

const STATUSES: OrderStatus[] = ['pending', 'processing', 'completed', 'failed', 'cancelled'];
const text = pgText(20);
const order = fc.record({
  status: fc.constantFrom(...STATUSES),
  // numeric(12, 2): whole cents up to 9,999,999,999.99
  cents: fc.oneof(fc.integer({ min: 0, max: 999_999_999_999 }), fc.constantFrom(0, 1, 10, 1999, 10_000)),
  failure_reason: fc.option(text, { nil: null }),
  cancelled_at: instantWithMicros,
  // few distinct instants, so that several orders share one and the id orders them
  created_at: fc.oneof(instantWithMicros, fc.constant('2026-11-25T10:00:00.123456Z')),
  updated_at: instantWithMicros,
});

describe('order pages rendered to JSON by PostgreSQL', () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestApp(undefined);
  });
  after(() => app.close());

  it("is byte for byte the text of the mapper's page, in every version, status filter and page", async () => {
    const db = app.ctx.db;
    await fc.assert(
      fc.asyncProperty(
        fc.array(order, { maxLength: 8 }),
        fc.option(fc.constantFrom(...STATUSES), { nil: undefined }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 5 }),
        async (orders, status, page, pageSize) => {
          const owner = await createUser(app, { login: false });
          for (const o of orders) {
            await db
              .insertInto('orders')
              .values({
                user_id: owner.user.id,
                status: o.status,
                total_amount: (o.cents / 100).toFixed(2),
                shipping_address: 'Somewhere 1',
                failure_reason: o.failure_reason,
                cancelled_at: (o.status === 'cancelled' ? o.cancelled_at : null) as never,
                created_at: o.created_at as never,
                updated_at: o.updated_at as never,
              })
              .execute();
          }
          for (const version of API_VERSIONS) {
            const statuses = statusesFor(version, status);
            let all = db.selectFrom('orders').selectAll().where('user_id', '=', owner.user.id);
            if (statuses) all = all.where('status', 'in', statuses);
            const rows = await all.orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
            const shown = rows.slice((page - 1) * pageSize, page * pageSize).map((o) => toOrderSummary(version, o));
            const { json, total } = await listUserOrdersJson(db, version, {
              userId: owner.user.id,
              statuses,
              limit: pageSize,
              offset: (page - 1) * pageSize,
            });
            assert.equal(pageJsonText(json, total, page, pageSize), JSON.stringify(pageOf(shown, rows.length, page, pageSize)), version);
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it("is byte for byte the text of the mapper's order detail, with its lines, in every version", async () => {
    const db = app.ctx.db;
    const owner = await createUser(app, { login: false });
    const products = await db
      .insertInto('products')
      .values([1, 2, 3].map((n) => ({ sku: `JSON-${n}-${Date.now()}`, name: `p${n}`, price: '1.00', stock: 10 })))
      .returning('id')
      .execute();
    const line = fc.record({
      product: fc.constantFrom(...products.map((p) => p.id)),
      name: text,
      quantity: fc.integer({ min: 1, max: 1000 }),
      cents: fc.integer({ min: 0, max: 999_999_999_999 }),
    });
    await fc.assert(
      fc.asyncProperty(order, text, fc.array(line, { maxLength: 4 }), async (o, address, lines) => {
        const { id } = await db
          .insertInto('orders')
          .values({
            user_id: owner.user.id,
            status: o.status,
            total_amount: (o.cents / 100).toFixed(2),
            shipping_address: address,
            failure_reason: o.failure_reason,
            cancelled_at: (o.status === 'cancelled' ? o.cancelled_at : null) as never,
            created_at: o.created_at as never,
            updated_at: o.updated_at as never,
          })
          .returning('id')
          .executeTakeFirstOrThrow();
        for (const l of lines) {
          await db
            .insertInto('order_items')
            .values({ order_id: id, product_id: l.product, product_name: l.name, quantity: l.quantity, unit_price: (l.cents / 100).toFixed(2) })
            .execute();
        }
        const found = await findOrderWithLines(db, id);
        assert.ok(found);
        for (const version of API_VERSIONS) {
          const rendered = await findOrderDetailJson(db, version, id);
          assert.equal(rendered?.userId, owner.user.id);
          assert.equal(rendered.json, JSON.stringify(toOrderDetail(version, found.order, found.lines)), version);
        }
      }),
      { numRuns: 40 },
    );
    assert.equal(await findOrderDetailJson(db, 'v2', 2_000_000_000), undefined);
  });
});
