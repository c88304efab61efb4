import { request, type Dispatcher } from 'undici';
import { assertSafeTargetUrl } from './ssrf.ts';
import { signStandardWebhook } from './webhook-signing.ts';

export const DELIVERY_TIMEOUT_MS = 15000;
/** How much of a subscriber's response body is read (and kept, in part, as the error text). */
export const RESPONSE_BODY_CAP = 4096;

export interface SignedMessage {
  url: string;
  secret: string;
  messageId: string;
  /** the exact JSON text that is signed and sent */
  body: string;
}

export interface AttemptResult {
  success: boolean;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
}

async function readCapped(body: Dispatcher.ResponseData['body'], cap: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      const buf = chunk as Buffer;
      chunks.push(buf);
      size += buf.length;
      if (size >= cap) break; // leaving the loop destroys the stream: the rest is never read
    }
  } catch {
    // a body that breaks off mid-way changes nothing about the status we already have
  }
  return Buffer.concat(chunks).subarray(0, cap).toString('utf8');
}

function describeError(err: unknown): string {
  const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return `timeout after ${DELIVERY_TIMEOUT_MS / 1000} s`;
  const code = e?.code ?? e?.cause?.code;
  const message = e?.message ?? String(err);
  return (code && !message.includes(code) ? `${code}: ${message}` : message).slice(0, 500);
}

/**
 * One delivery attempt per Standard Webhooks: POST the body with `webhook-id`, `webhook-timestamp`
 * and `webhook-signature`. 2xx is success; redirects are not followed (a 3xx is a failure); the whole
 * attempt is bounded by the timeout; the response body is read only up to a small cap.
 */
export async function sendSignedMessage(
  dispatcher: Dispatcher,
  message: SignedMessage,
  opts: { allowPrivate: boolean; timeoutMs?: number; now?: () => number },
): Promise<AttemptResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  try {
    assertSafeTargetUrl(message.url, opts.allowPrivate);
    const timestamp = Math.floor((opts.now?.() ?? Date.now()) / 1000);
    const res = await request(message.url, {
      dispatcher,
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'order-account-service-webhooks/1.0',
        'webhook-id': message.messageId,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signStandardWebhook(message.secret, message.messageId, timestamp, message.body),
      },
      body: message.body,
      signal: AbortSignal.timeout(opts.timeoutMs ?? DELIVERY_TIMEOUT_MS),
    });
    const text = await readCapped(res.body, RESPONSE_BODY_CAP);
    const success = res.statusCode >= 200 && res.statusCode < 300;
    let error: string | null = null;
    if (!success) {
      const location = res.headers.location;
      const snippet = text.trim().slice(0, 200);
      error =
        res.statusCode >= 300 && res.statusCode < 400
          ? `HTTP ${res.statusCode}: redirect not followed${typeof location === 'string' ? ` (${location.slice(0, 200)})` : ''}`
          : `HTTP ${res.statusCode}${snippet ? `: ${snippet}` : ''}`;
    }
    return { success, statusCode: res.statusCode, durationMs: elapsed(), error };
  } catch (err) {
    return { success: false, statusCode: null, durationMs: elapsed(), error: describeError(err) };
  }
}
