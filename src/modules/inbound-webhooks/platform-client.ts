import type { Dispatcher } from 'undici';

export interface FulfilmentReport {
  externalId: string;
  orderId: number;
  status: 'completed' | 'failed';
  failureReason: string | null;
  lines: { sku: string; quantity: number }[];
}

/**
 * Tells the platform how its order ended (Shopify Admin API style). The URL is the operator's own,
 * so no SSRF guard; a non-2xx answer throws, and the job is retried.
 */
export async function reportFulfilment(
  opts: { baseUrl: string; token: string | undefined; timeoutMs: number; dispatcher?: Dispatcher },
  report: FulfilmentReport,
): Promise<number> {
  const url = `${opts.baseUrl.replace(/\/+$/, '')}/orders/${encodeURIComponent(report.externalId)}/fulfillments`;
  const body = {
    fulfillment: {
      order_id: report.externalId,
      status: report.status === 'completed' ? 'success' : 'failure',
      ...(report.failureReason ? { message: report.failureReason } : {}),
      notify_customer: report.status === 'completed',
      line_items: report.lines,
      service_order_id: report.orderId,
    },
  };
  // loaded on the first report: an API process never sends one
  const { request } = await import('undici');
  const res = await request(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json',
      ...(opts.token ? { 'x-shopify-access-token': opts.token } : {}),
    },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(opts.timeoutMs),
    ...(opts.dispatcher ? { dispatcher: opts.dispatcher } : {}),
  });
  await res.body.dump({ limit: 4096 });
  if (res.statusCode < 200 || res.statusCode >= 300) {
    throw new Error(`platform API answered ${res.statusCode} for order ${report.externalId}`);
  }
  return res.statusCode;
}
