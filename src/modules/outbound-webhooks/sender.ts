import crypto from 'node:crypto';
import type { Dispatcher } from 'undici';
import type { WebhookSubscriptionRow } from './outbound-webhooks.tables.ts';
import { targetUrlProblem, UnsafeTargetError } from './ssrf.ts';

export const DELIVERY_TIMEOUT_MS = 15000;
/** How much of a subscriber's response body is read, and how much of it is kept with the attempt (and shown). */
const RESPONSE_BODY_CAP = 4096;
const STORED_RESPONSE_BYTES = 1024;
const TIMEOUT_REASON = `timeout after ${DELIVERY_TIMEOUT_MS / 1000} s`;

/** When the secret before the last rotation stops signing; null when it does not sign (any more). */
export function overlapEnd(subscription: WebhookSubscriptionRow, now = Date.now()): Date | null {
  const expires = subscription.previous_secret_expires_at;
  if (subscription.previous_secret === null || expires === null) return null;
  const end = new Date(expires);
  return end.getTime() > now ? end : null;
}

/** `v1,` + base64 HMAC-SHA256 of `{id}.{timestamp}.{body}` (Standard Webhooks; the key is the base64 after `whsec_`). */
function signStandardWebhook(secret: string, messageId: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
  return `v1,${crypto.createHmac('sha256', key).update(`${messageId}.${timestampSeconds}.${body}`).digest('base64')}`;
}

interface SignedMessage {
  url: string;
  secret: string;
  /** the secret before a rotation, while its overlap lasts: its signature is sent too */
  previousSecret?: string | null;
  messageId: string;
  /** the exact JSON text that is signed and sent */
  body: string;
}

export interface AttemptResult {
  success: boolean;
  statusCode: number | null;
  durationMs: number;
  /** what the subscriber reads: the receiver's own answer, or a generic reason */
  error: string | null;
  /** the full cause of a failure that never got an answer, for the service log only */
  detail: string | null;
  /** the headers the request was (or was to be) sent with */
  headers: Record<string, string>;
  /** the first KiB of the response body; null when there was no response */
  responseBody: string | null;
}

/** PostgreSQL text holds no NUL; a receiver's bytes are kept readable, not refused. */
function storable(text: string): string {
  return text.replace(/\u0000/g, '\uFFFD');
}

async function readCapped(body: Dispatcher.ResponseData['body'], cap: number): Promise<Buffer> {
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
  return Buffer.concat(chunks).subarray(0, cap);
}

const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH)/;
const REASONS: [string, string[]][] = [
  ['host not found', ['ENOTFOUND', 'EAI_AGAIN', 'EAI_NODATA', 'EAI_NONAME']],
  ['connection refused', ['ECONNREFUSED']],
  ['connection reset', ['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']],
  ['host unreachable', ['EHOSTUNREACH', 'ENETUNREACH']],
  [TIMEOUT_REASON, ['ETIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']],
];

/** The subscriber-visible reason of a request that got no answer: fixed texts only (the cause may name internal hosts). */
function publicReason(err: unknown): string {
  const e = err as { name?: string; code?: string; cause?: { code?: string } } | undefined;
  if (err instanceof UnsafeTargetError || e?.code === 'EUNSAFETARGET') return 'target address not allowed';
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return TIMEOUT_REASON;
  const code = e?.code ?? e?.cause?.code ?? '';
  const known = REASONS.find(([, codes]) => codes.includes(code));
  if (known) return known[0];
  return TLS_CODE.test(code) ? `TLS error (${code})` : 'connection failed';
}

function describeError(err: unknown): string {
  const e = err as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = e?.code ?? e?.cause?.code;
  const message = e?.message ?? String(err);
  const cause = e?.cause?.message && e.cause.message !== message ? ` (${e.cause.message})` : '';
  return (code && !message.includes(code) ? `${code}: ${message}${cause}` : `${message}${cause}`).slice(0, 1000);
}

/** One Standard Webhooks delivery attempt: 2xx is success, a redirect is not followed, the body is read up to a cap. */
export async function sendSignedMessage(dispatcher: Dispatcher, message: SignedMessage, opts: { allowPrivate: boolean }): Promise<AttemptResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const timestamp = Math.floor(Date.now() / 1000);
  const secrets = message.previousSecret ? [message.secret, message.previousSecret] : [message.secret];
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'order-account-service-webhooks/1.0',
    'webhook-id': message.messageId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((secret) => signStandardWebhook(secret, message.messageId, timestamp, message.body)).join(' '),
  };
  try {
    const problem = targetUrlProblem(message.url, opts.allowPrivate);
    if (problem) throw new UnsafeTargetError(problem);
    const { request } = await import('undici');
    const res = await request(message.url, {
      dispatcher,
      method: 'POST',
      headers,
      body: message.body,
      signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
    });
    const bytes = await readCapped(res.body, RESPONSE_BODY_CAP);
    const success = res.statusCode >= 200 && res.statusCode < 300;
    const location = res.headers.location;
    const snippet = storable(bytes.toString('utf8')).trim().slice(0, 200);
    const error = success
      ? null
      : res.statusCode >= 300 && res.statusCode < 400
        ? `HTTP ${res.statusCode}: redirect not followed${typeof location === 'string' ? ` (${storable(location).slice(0, 200)})` : ''}`
        : `HTTP ${res.statusCode}${snippet ? `: ${snippet}` : ''}`;
    return {
      success,
      statusCode: res.statusCode,
      durationMs: elapsed(),
      error,
      detail: null,
      headers,
      responseBody: storable(bytes.subarray(0, STORED_RESPONSE_BYTES).toString('utf8')),
    };
  } catch (err) {
    return { success: false, statusCode: null, durationMs: elapsed(), error: publicReason(err), detail: describeError(err), headers, responseBody: null };
  }
}

/** The destination (normalised host and port) a delivery counts against for the per-host limit. */
export function destinationOf(url: string): string {
  return URL.parse(url)?.host ?? url.slice(0, 200);
}
