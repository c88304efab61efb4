import client from 'prom-client';
import type { OrderStatus } from '../../db/schema.ts';

/** Order status changes counted by the process that makes them (decision 011); /metrics registers it. */
export const orderStatusTransitions = new client.Counter({
  name: 'order_status_transitions_total',
  help: 'Order status changes made by this process since it started, by the status moved to (pending: created, or queued again by a retry)',
  labelNames: ['status'],
  registers: [],
});
for (const status of ['pending', 'processing', 'completed', 'failed', 'cancelled'] satisfies OrderStatus[]) orderStatusTransitions.inc({ status }, 0);
