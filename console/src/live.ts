/**
 * The order events of GET /api/v2/events (Server-Sent Events) for the pages that follow them. One
 * stream per tab, shared by every listener: fetch with the session's bearer token (EventSource sends
 * no headers, and a token never goes in a URL), a streaming parser of the SSE frames, and a
 * reconnection that resumes with Last-Event-ID after a back-off, refreshing the token on a 401.
 */
import { useEffect, useRef } from 'preact/hooks';
import type { Console } from './api.ts';
import { useSession } from './session.ts';
import type { OrderDetail } from './types.ts';

export type Order = OrderDetail;

export interface OrderChange {
  /** the event's id (order_events.id), increasing */
  id: string;
  /** order.created, order.status_changed or order.cancelled */
  type: string;
  /** the order as GET /api/v2/orders/{id} reads it */
  order: Order;
}

/** an order's change, or `undefined` when the stream has opened: a page reads its data again then */
type Listener = (e: OrderChange | undefined) => void;

const FIRST_RETRY_MS = 1000;
const MAX_RETRY_MS = 30_000;

interface Frame {
  id?: string;
  event: string;
  data: string;
}

/**
 * Feeds decoded text and calls `onFrame` for each complete frame (the SSE rules: lines end with
 * CRLF, LF or CR; `:` starts a comment; data lines join with LF; a blank line ends the frame).
 */
export function sseParser(onFrame: (f: Frame) => void): (chunk: string) => void {
  let buffer = '';
  let event = '';
  let data: string[] = [];
  let id: string | undefined;
  return (chunk) => {
    buffer += chunk;
    for (;;) {
      const end = buffer.search(/\r\n|\r|\n/);
      // a CR at the very end may be the first half of a CRLF: wait for the next chunk
      if (end < 0 || (end === buffer.length - 1 && buffer[end] === '\r')) return;
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + (buffer.startsWith('\r\n', end) ? 2 : 1));
      if (line === '') {
        if (data.length > 0) onFrame({ id, event: event || 'message', data: data.join('\n') });
        event = '';
        data = [];
        id = undefined;
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + (line[colon + 1] === ' ' ? 2 : 1));
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
      else if (field === 'id' && !value.includes('\0')) id = value;
    }
  };
}

/** The tab's one stream for a client, started by the first listener and ended with the last. */
class OrderStream {
  readonly listeners = new Set<Listener>();
  private abort: AbortController | undefined;
  private lastEventId: string | undefined;
  private retryMs = FIRST_RETRY_MS;
  private timer: ReturnType<typeof setTimeout> | undefined;

  private readonly client: Console;

  constructor(client: Console) {
    this.client = client;
  }

  start(): void {
    if (this.abort || this.timer) return;
    void this.connect();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.abort?.abort();
    this.abort = undefined;
  }

  private async connect(): Promise<void> {
    this.timer = undefined;
    const abort = new AbortController();
    this.abort = abort;
    try {
      let response = await this.open(abort.signal);
      // an expired access token: refreshed once, as the client does for its calls
      if (response.status === 401 && (await this.client.refresh())) response = await this.open(abort.signal);
      // a session a refresh cannot mend: the next call of the page signs out; nothing to follow
      if (response.status === 401 || response.status === 403) return this.end(abort);
      if (response.ok && response.body) {
        this.retryMs = FIRST_RETRY_MS;
        // the stream follows every change from here on; what changed before it is read again
        for (const listener of [...this.listeners]) listener(undefined);
        await this.read(response.body, abort.signal);
      } else {
        const after = Number(response.headers.get('retry-after'));
        if (after > 0) this.retryMs = Math.max(this.retryMs, after * 1000);
      }
    } catch {
      // a network failure or the stream cut: tried again below
    }
    if (abort.signal.aborted) return;
    this.abort = undefined;
    this.timer = setTimeout(() => void this.connect(), this.retryMs);
    this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
  }

  private end(abort: AbortController): void {
    if (this.abort === abort) this.abort = undefined;
  }

  private open(signal: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    const token = this.client.session?.accessToken;
    if (token) headers.authorization = `Bearer ${token}`;
    if (this.lastEventId !== undefined) headers['last-event-id'] = this.lastEventId;
    return fetch('/api/v2/events', { headers, signal, cache: 'no-store' });
  }

  private async read(body: ReadableStream<Uint8Array>, signal: AbortSignal): Promise<void> {
    const parse = sseParser((frame) => {
      if (frame.id !== undefined) this.lastEventId = frame.id;
      if (!frame.event.startsWith('order.')) return;
      let order: Order;
      try {
        order = JSON.parse(frame.data) as Order;
      } catch {
        return;
      }
      const change = { id: frame.id ?? '', type: frame.event, order };
      for (const listener of [...this.listeners]) listener(change);
    });
    const decoder = new TextDecoder();
    const reader = body.getReader();
    const cancel = () => void reader.cancel().catch(() => undefined);
    signal.addEventListener('abort', cancel, { once: true });
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        parse(decoder.decode(value, { stream: true }));
      }
    } finally {
      signal.removeEventListener('abort', cancel);
    }
  }
}

const streams = new WeakMap<Console, OrderStream>();

/**
 * Calls `onEvent` with each order event the signed-in user may see (their own orders; every order
 * for an administrator) while the component is mounted and `active`, and with `undefined` each
 * time the stream opens: a change made before it opened is not on the stream.
 */
export function useOrderEvents(onEvent: Listener, active = true): void {
  const { client } = useSession();
  const latest = useRef(onEvent);
  latest.current = onEvent;
  useEffect(() => {
    if (!active) return;
    let stream = streams.get(client);
    if (!stream) {
      stream = new OrderStream(client);
      streams.set(client, stream);
    }
    const listener: Listener = (e) => latest.current(e);
    stream.listeners.add(listener);
    stream.start();
    const mine = stream;
    return () => {
      mine.listeners.delete(listener);
      if (mine.listeners.size === 0) mine.stop();
    };
  }, [client, active]);
}
