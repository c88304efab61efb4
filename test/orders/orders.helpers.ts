import type { FastifyInstance } from 'fastify';
import type { OrderRow } from '../../src/db/schema.ts';
import { waitFor } from '../helpers/app.ts';

/** Polls the database until the order reaches completed or failed. */
export async function waitForFinal(app: FastifyInstance, orderId: number, timeoutMs = 20000): Promise<OrderRow> {
  return waitFor(async () => {
    const row = await app.ctx.db.selectFrom('orders').selectAll().where('id', '=', orderId).executeTakeFirst();
    return row && (row.status === 'completed' || row.status === 'failed') ? row : undefined;
  }, timeoutMs);
}

export async function eventsOf(app: FastifyInstance, orderId: number) {
  return app.ctx.db
    .selectFrom('order_events')
    .select(['type', 'previous_status', 'status', 'sequence', 'total_amount'])
    .where('order_id', '=', orderId)
    .orderBy('sequence', 'asc')
    .execute();
}
