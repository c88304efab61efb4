import client from 'prom-client';

/** Registered by /metrics (operations.metrics.ts), not here. */
export const webhookDeliveryAttempts = new client.Counter({
  name: 'webhook_deliveries_total',
  help: 'Outgoing webhook delivery attempts recorded by this process since it started, by result (success: a 2xx answer; failure: any other answer or none)',
  labelNames: ['result'],
  registers: [],
});
for (const result of ['success', 'failure']) webhookDeliveryAttempts.inc({ result }, 0);
