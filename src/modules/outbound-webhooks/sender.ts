import type { Dispatcher } from 'undici';
import { assertSafeTargetUrl, UnsafeTargetError } from './ssrf.ts';
import { signStandardWebhook } from './signing.ts';

export const DELIVERY_TIMEOUT_MS = 15000;
/** How much of a subscriber's response body is read. */
export const RESPONSE_BODY_CAP = 4096;
/** How much of it is kept with the attempt (and shown to the subscriber). */
export const STORED_RESPONSE_BYTES = 1024;

export interface SignedMessage {
  url: string;
  /** the current secret */
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

/** The subscriber-visible reason of a request that got no answer: fixed texts only (the cause may name internal hosts). */
export function publicReason(err: unknown): string {
  const e = err as { name?: string; code?: string; cause?: { code?: string } } | undefined;
  if (err instanceof UnsafeTargetError || e?.code === 'EUNSAFETARGET') return 'target address not allowed';
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return `timeout after ${DELIVERY_TIMEOUT_MS / 1000} s`;
  const code = e?.code ?? e?.cause?.code ?? '';
  switch (code) {
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NODATA':
    case 'EAI_NONAME':
      return 'host not found';
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
    case 'EPIPE':
    case 'UND_ERR_SOCKET':
    case 'UND_ERR_CLOSED':
      return 'connection reset';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    case 'ETIMEDOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
      return `timeout after ${DELIVERY_TIMEOUT_MS / 1000} s`;
    default:
      return TLS_CODE.test(code) ? `TLS error (${code})` : 'connection failed';
  }
}

function describeError(err: unknown): string {
  const e = err as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = e?.code ?? e?.cause?.code;
  const message = e?.message ?? String(err);
  const cause = e?.cause?.message && e.cause.message !== message ? ` (${e.cause.message})` : '';
  return (code && !message.includes(code) ? `${code}: ${message}${cause}` : `${message}${cause}`).slice(0, 1000);
}

/** The `webhook-signature` value: one `v1,` entry per secret, space-separated (Standard Webhooks). */
export function signatureHeader(message: SignedMessage, timestampSeconds: number): string {
  const secrets = message.previousSecret ? [message.secret, message.previousSecret] : [message.secret];
  return secrets.map((s) => signStandardWebhook(s, message.messageId, timestampSeconds, message.body)).join(' ');
}

/** One Standard Webhooks delivery attempt: 2xx is success, a redirect is not followed, the body is read up to a cap. */
export async function sendSignedMessage(
  dispatcher: Dispatcher,
  message: SignedMessage,
  opts: { allowPrivate: boolean; timeoutMs?: number; now?: () => number },
): Promise<AttemptResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const timestamp = Math.floor((opts.now?.() ?? Date.now()) / 1000);
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'order-account-service-webhooks/1.0',
    'webhook-id': message.messageId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(message, timestamp),
  };
  try {
    assertSafeTargetUrl(message.url, opts.allowPrivate);
    const { request } = await import('undici');
    const res = await request(message.url, {
      dispatcher,
      method: 'POST',
      headers,
      body: message.body,
      signal: AbortSignal.timeout(opts.timeoutMs ?? DELIVERY_TIMEOUT_MS),
    });
    const bytes = await readCapped(res.body, RESPONSE_BODY_CAP);
    const text = storable(bytes.toString('utf8'));
    const success = res.statusCode >= 200 && res.statusCode < 300;
    let error: string | null = null;
    if (!success) {
      const location = res.headers.location;
      const snippet = text.trim().slice(0, 200);
      error =
        res.statusCode >= 300 && res.statusCode < 400
          ? `HTTP ${res.statusCode}: redirect not followed${typeof location === 'string' ? ` (${storable(location).slice(0, 200)})` : ''}`
          : `HTTP ${res.statusCode}${snippet ? `: ${snippet}` : ''}`;
    }
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
  try {
    return new URL(url).host;
  } catch {
    return url.slice(0, 200);
  }
}
