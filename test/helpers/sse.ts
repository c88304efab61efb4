import http from 'node:http';
import { waitFor } from './app.ts';

/** A frame of an SSE stream: an event (with its id) or a comment. */
export interface SseFrame {
  id?: string;
  event?: string;
  data?: string;
  comment?: string;
}

/** An open GET /api/v2/events stream read as it comes: every frame so far, and a wait for the next ones. */
export interface SseStream {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** a refusal's body as read so far */
  body: () => string | undefined;
  frames: SseFrame[];
  /** true once the server ended the stream */
  ended: () => boolean;
  /** waits until `check` finds what it looks for in the frames so far */
  until<T>(check: (frames: SseFrame[]) => T | undefined, timeoutMs?: number): Promise<T>;
  close(): void;
}

/**
 * Opens the stream at `base` with a bearer token (and Last-Event-ID), and reads it in the background.
 * node:http on a connection of its own: close() destroys it (fetch's abort leaves a spare idle
 * connection behind, which holds up the server's close).
 */
export async function openEvents(base: string, token: string | undefined, lastEventId?: string): Promise<SseStream> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    http.get(`${base}/api/v2/events`, { headers, agent: false }, resolve).once('error', reject);
  });
  const frames: SseFrame[] = [];
  let ended = false;
  let buffer = '';
  res.setEncoding('utf8');
  res.on('data', (chunk: string) => {
    buffer += chunk;
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      frames.push(parseFrame(buffer.slice(0, end)));
      buffer = buffer.slice(end + 2);
    }
  });
  res.once('close', () => (ended = true));
  res.once('error', () => (ended = true));
  const status = res.statusCode ?? 0;
  return {
    status,
    headers: res.headers,
    frames,
    body: () => (status === 200 ? undefined : buffer),
    ended: () => ended,
    until: (check, timeoutMs = 10_000) => waitFor(async () => check(frames), timeoutMs, 20),
    close: () => res.destroy(),
  };
}

function parseFrame(text: string): SseFrame {
  const frame: SseFrame = {};
  for (const line of text.split('\n')) {
    if (line.startsWith(':')) frame.comment = line.slice(1).trim();
    const m = /^(id|event|data): ?(.*)$/.exec(line);
    if (m) frame[m[1] as 'id' | 'event' | 'data'] = m[2];
  }
  return frame;
}

/** The order events of the frames (those of `orderId`, when given), with their order parsed. */
export function orderEvents(frames: SseFrame[], orderId?: number): { id: number; event: string; order: { id: number; user_id: number; status: string } & Record<string, unknown> }[] {
  return frames
    .filter((f) => f.event !== undefined && f.data !== undefined)
    .map((f) => ({ id: Number(f.id), event: f.event as string, order: JSON.parse(f.data as string) as { id: number; user_id: number; status: string } }))
    .filter((e) => orderId === undefined || e.order.id === orderId);
}
