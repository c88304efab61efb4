import type { FastifyInstance } from 'fastify';
import type { OrderRow } from '../../../src/db/schema.ts';
import { insertOrder } from '../../../src/modules/orders/orders.changes.repository.ts';
import { api, type TestUser } from '../../helpers/app.ts';

/**
 * A pending order written straight to the database, with its `order.created` event but without a
 * processing job: it stays pending until a test processes it (with `processorFor`), so a test
 * decides when its processing runs.
 */
export async function pendingOrder(app: FastifyInstance, owner: TestUser, lines: { productId: number; quantity: number }[]): Promise<OrderRow> {
  return app.ctx.db.transaction().execute(async (trx) => {
    const { order } = await insertOrder(trx, { userId: owner.user.id, shippingAddress: '1 Main St', lines });
    if (!order) throw new Error('a product of the order is unknown or inactive');
    return order;
  });
}

/** POST /api/v2/orders/{id}/cancel, with a body when given. */
export function cancel(app: FastifyInstance, who: TestUser | null, orderId: number, payload?: unknown) {
  return api(app, who, { method: 'POST', url: `/api/v2/orders/${orderId}/cancel`, ...(payload === undefined ? {} : { payload: payload as object }) });
}

/** The units of each product that completed orders hold (what their processing took from stock). */
export async function unitsHeld(app: FastifyInstance): Promise<Map<number, number>> {
  const rows = await app.ctx.db
    .selectFrom('order_items as oi')
    .innerJoin('orders as o', 'o.id', 'oi.order_id')
    .select(['oi.product_id', (eb) => eb.fn.sum<string>('oi.quantity').as('units')])
    .where('o.status', '=', 'completed')
    .groupBy('oi.product_id')
    .execute();
  return new Map(rows.map((r) => [r.product_id, Number(r.units)]));
}

export async function statusOf(app: FastifyInstance, orderId: number): Promise<string> {
  const row = await app.ctx.db.selectFrom('orders').select('status').where('id', '=', orderId).executeTakeFirstOrThrow();
  return row.status;
}

/** Every string anywhere in a parsed JSON value, with its path. */
export function stringsIn(value: unknown, path = '$'): { path: string; value: string }[] {
  if (typeof value === 'string') return [{ path, value }];
  if (Array.isArray(value)) return value.flatMap((v, i) => stringsIn(v, `${path}[${i}]`));
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => stringsIn(v, `${path}.${k}`));
  return [];
}
