import type { AppContext } from '../../app-context.ts';
import type { OrderEventRow } from '../../db/schema.ts';
import { toOrderDetail } from '../orders/orders.mapper.ts';
import { findOrdersWithLines, latestOrderEventId, readOrderEventsAfter, replayOrderEvents } from '../orders/orders.reads.repository.ts';

/** An event ready to send: its SSE frame, and whose order it is. */
export interface LiveEvent {
  id: number;
  userId: number;
  frame: string;
}

/** One open stream: the events its user may see are handed to `send`. */
export interface Subscriber {
  userId: number;
  admin: boolean;
  send(event: LiveEvent): void;
  /** ends the stream (the server is shutting down) */
  end(): void;
}

const PAGE = 1000;
/** how long an id missing below a newer one holds the newer ones back (a transaction still committing) */
const HOLD_MS = 1000;
/** how long such an id is still looked for, and sent when it appears (a long transaction) */
const WATCH_MS = 60_000;
/** more missing ids than this at once are not looked for (a jump of the sequence, not transactions in flight) */
const MAX_MISSING = 10_000;

/** The event's name on the stream: a cancellation is `order.cancelled`, as v2's webhooks call it. */
export function eventName(e: OrderEventRow): string {
  if (e.status === 'cancelled') return 'order.cancelled';
  return e.type === 'order.created' ? 'order.created' : 'order.status_changed';
}

/**
 * The process's one reader of the `order_events` outbox, shared by every open stream: every `pollMs` while a stream is
 * open it reads the events after the newest it has seen, and again the ids it found missing below a newer one (an id is
 * taken at insert, so a lower one may commit after a higher one). A newer event waits up to HOLD_MS for a missing one, so
 * a stream's ids ascend; a missing id is looked for until WATCH_MS and sent late if it appears (docs/decisions/144-live-events.md).
 */
export class OrderEventFeed {
  private readonly subscribers = new Set<Subscriber>();
  /** the newest id read; undefined until the feed has found where new events begin */
  private after: number | undefined;
  /** settles once the feed has tried to find where new events begin */
  private ready: Promise<void> = Promise.resolve();
  /** ids not read yet below `after`, with when they were found missing */
  private readonly missing = new Map<number, number>();
  /** events read, waiting for a missing id below them */
  private held: OrderEventRow[] = [];
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private generation = 0;
  /** the order's JSON as GET /api/v2/orders/{id} serializes it (the route's serializer, set by the route) */
  serialize: ((order: unknown) => string) | undefined;

  /** `pollMs`: how often the outbox is read while a stream is open */
  private readonly opts: Pick<AppContext, 'db' | 'log'> & { pollMs: number };

  constructor(opts: OrderEventFeed['opts']) {
    this.opts = opts;
  }

  /** Open streams of `userId` in this process. */
  streamsOf(userId: number): number {
    let n = 0;
    for (const s of this.subscribers) if (s.userId === userId) n++;
    return n;
  }

  /**
   * Adds a stream. The promise settles once the feed knows where new events begin: every event committed after it
   * reaches the stream, so a client that reads its data again once the stream is open misses nothing.
   */
  subscribe(s: Subscriber): Promise<void> {
    this.subscribers.add(s);
    if (this.subscribers.size === 1) this.start();
    return this.ready;
  }

  unsubscribe(s: Subscriber): void {
    if (this.subscribers.delete(s) && this.subscribers.size === 0) this.stop();
  }

  /** Ends every stream and stops reading (shutdown: an open stream must not hold the server up). */
  async close(): Promise<void> {
    for (const s of [...this.subscribers]) s.end();
    this.stop();
    await this.running;
  }

  /** Up to `limit` events after `after` that a user may see, as frames, oldest first (Last-Event-ID); `full`: `limit` were read. */
  async replay(after: number, viewer: { userId: number; admin: boolean }, limit: number): Promise<{ events: LiveEvent[]; full: boolean }> {
    const rows = await replayOrderEvents(this.opts.db, { after, userId: viewer.admin ? undefined : viewer.userId, limit });
    return { events: await this.framesOf(rows), full: rows.length === limit };
  }

  private start(): void {
    const generation = ++this.generation;
    this.after = undefined;
    this.running = this.ready = this.findStart(generation).then(() => this.schedule(generation, this.opts.pollMs));
  }

  /** A stream opened now begins with the events committed from now on (older ones: Last-Event-ID). */
  private async findStart(generation: number): Promise<void> {
    try {
      const id = await latestOrderEventId(this.opts.db);
      if (generation === this.generation) this.after = id;
    } catch (err) {
      this.opts.log.warn({ err }, 'live events: the newest event id could not be read; trying again');
    }
  }

  private stop(): void {
    this.generation++;
    clearTimeout(this.timer);
    this.missing.clear();
    this.held = [];
  }

  private schedule(generation: number, ms: number): void {
    if (generation !== this.generation) return;
    this.timer = setTimeout(() => {
      this.running = this.tick(generation);
    }, ms);
  }

  private async tick(generation: number): Promise<void> {
    if (this.after === undefined) {
      await this.findStart(generation);
      return this.schedule(generation, this.opts.pollMs);
    }
    let full = false;
    try {
      const rows = await readOrderEventsAfter(this.opts.db, this.after, [...this.missing.keys()], PAGE);
      if (generation !== this.generation) return;
      full = rows.length === PAGE;
      const ready = this.take(rows, this.after, Date.now());
      const events = await this.framesOf(ready);
      if (generation !== this.generation) return;
      for (const e of events) for (const s of this.subscribers) if (s.admin || s.userId === e.userId) s.send(e);
    } catch (err) {
      this.opts.log.warn({ err }, 'live events: reading the order events failed; trying again');
    }
    this.schedule(generation, full ? 0 : this.opts.pollMs);
  }

  /** Records what `rows` (oldest first) fill and leave missing; returns the events to send now, oldest first. */
  private take(rows: OrderEventRow[], after: number, now: number): OrderEventRow[] {
    for (const row of rows) {
      if (this.missing.delete(row.id)) {
        this.held.push(row);
        continue;
      }
      if (row.id <= after) continue;
      if (row.id - after - 1 <= MAX_MISSING - this.missing.size) {
        for (let id = after + 1; id < row.id; id++) this.missing.set(id, now);
      }
      after = row.id;
      this.held.push(row);
    }
    this.after = after;
    let holdBelow = Infinity;
    for (const [id, since] of this.missing) {
      if (now - since >= WATCH_MS) this.missing.delete(id);
      else if (now - since < HOLD_MS && id < holdBelow) holdBelow = id;
    }
    this.held.sort((a, b) => a.id - b.id);
    const cut = this.held.findIndex((e) => e.id > holdBelow);
    const ready = cut < 0 ? this.held : this.held.slice(0, cut);
    this.held = cut < 0 ? [] : this.held.slice(cut);
    return ready;
  }

  /** The events as frames, each with its order as it is now (one read for all of them). */
  private async framesOf(rows: readonly OrderEventRow[]): Promise<LiveEvent[]> {
    if (rows.length === 0) return [];
    const serialize = this.serialize;
    if (!serialize) throw new Error('live events: no serializer set before the first stream');
    const orders = await findOrdersWithLines(this.opts.db, [...new Set(rows.map((e) => e.order_id))]);
    const json = new Map(orders.map((o) => [o.order.id, serialize(toOrderDetail('v2', o.order, o.lines))]));
    return rows.flatMap((e) => {
      const data = json.get(e.order_id);
      return data === undefined ? [] : [{ id: e.id, userId: e.user_id, frame: `id: ${e.id}\nevent: ${eventName(e)}\ndata: ${data}\n\n` }];
    });
  }
}
