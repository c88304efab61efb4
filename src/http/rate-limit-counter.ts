import { RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';

/** What the rate-limit hook needs to know about one counted request. */
export interface Verdict {
  readonly remaining: number;
  readonly msBeforeNext: number;
  readonly exceeded: boolean;
}

/** One counted request, straight from a rate-limiter-flexible limiter. */
export async function consumeNow(limiter: RateLimiterAbstract, key: string, points = 1): Promise<Verdict & { consumed: number }> {
  try {
    const res = await limiter.consume(key, points);
    return { remaining: res.remainingPoints, msBeforeNext: res.msBeforeNext, exceeded: false, consumed: res.consumedPoints };
  } catch (err) {
    // a rejection is either "over the limit" (a RateLimiterRes) or a store error without insurance
    if (!(err instanceof RateLimiterRes)) throw err;
    return { remaining: err.remainingPoints, msBeforeNext: err.msBeforeNext, exceeded: true, consumed: err.consumedPoints };
  }
}

/** This process's view of one key's window in the shared store. */
interface Window {
  /** the window's count as the store last reported it: every process's requests */
  known: number;
  /** requests counted here and sent, whose answer has not come back */
  inFlight: number;
  /** requests counted here and not sent yet */
  pending: number;
  /** when the store's window ends (this process's clock) */
  endsAt: number;
}

/** No request is counted locally this close to the end of a window, so none lands in the next one. */
const END_GUARD_MS = 1000;

/**
 * How long a request counted in the first quarter of its key's limit may wait to be sent, so that
 * the requests of a process at rest go to Redis a few at a time: each batch costs the process a
 * wake-up for the answer, and one per request was a tenth of its CPU per request at 50 requests/s.
 * Well below END_GUARD_MS, so a request counted before the guard still reaches its own window.
 */
const LOW_COUNT_DELAY_MS = 100;

/**
 * A shared (Redis) rate-limit counter that does not wait for the store while a key is far from
 * its limit. Waiting for Redis on every request took about a third of the API's CPU on a cheap
 * read, and one more wake-up per request.
 *
 * - A key's first request in a window, and every request in the second half of its limit, waits
 *   for Redis as before, so the 429 is decided by the shared count.
 * - Any other request is counted here, answered at once, and sent to Redis in the next batch: one
 *   batch at a time, with everything counted meanwhile (so under load one write carries many
 *   requests). A request in the second quarter of its key's limit starts the next batch within a
 *   tick; one in the first quarter lets it wait up to LOW_COUNT_DELAY_MS for company. Each answer
 *   refreshes this process's view of the shared count.
 *
 * In one process the count, `X-RateLimit-Remaining` and the 429 are exact. Across processes, the
 * count a process shows may lag behind the others' requests of the last round trip. The 429 stays
 * exact as long as those unseen requests are fewer than half the limit: a tenth was not enough
 * for 4 concurrent requests over 2 processes at a limit of 30 (the reliability soak saw 32 pass).
 * The requests that wait are at most a quarter of it, and a process sends them with its first
 * request past that quarter.
 */
export class WriteBehindCounter {
  private readonly windows = new Map<string, Window>();
  private readonly dirty = new Set<string>();
  private flushing: Promise<void> | undefined;
  /** the batch that waits for company (LOW_COUNT_DELAY_MS) */
  private delayed: NodeJS.Timeout | undefined;
  private readonly sweeper: NodeJS.Timeout;
  private readonly limiter: RateLimiterAbstract;
  private readonly points: number;
  private readonly margin: number;
  /** counts up to this one may wait for the next batch (LOW_COUNT_DELAY_MS) */
  private readonly lowCount: number;
  private readonly shared: () => boolean;
  private readonly onSendError: (err: unknown) => void;

  /**
   * @param shared whether counting locally is allowed now (Redis connected, not falling back)
   * @param onSendError a batch that failed outright (not an insurance answer): its requests are
   *   lost to the shared count, which then errs low for this window
   */
  constructor(opts: { limiter: RateLimiterAbstract; points: number; windowMs: number; shared: () => boolean; onSendError: (err: unknown) => void }) {
    this.limiter = opts.limiter;
    this.points = opts.points;
    // the half of the limit that always waits for Redis (see above)
    this.margin = Math.max(1, Math.ceil(opts.points / 2));
    this.lowCount = Math.floor(opts.points / 4);
    this.shared = opts.shared;
    this.onSendError = opts.onSendError;
    this.sweeper = setInterval(() => this.sweep(), opts.windowMs).unref();
  }

  consume(key: string): Verdict | Promise<Verdict> {
    const now = Date.now();
    const w = this.windows.get(key);
    if (w && now < w.endsAt - END_GUARD_MS && this.shared()) {
      const counted = w.known + w.inFlight + w.pending + 1;
      if (counted <= this.points - this.margin) {
        w.pending++;
        this.dirty.add(key);
        this.schedule(counted <= this.lowCount);
        return { remaining: this.points - counted, msBeforeNext: w.endsAt - now, exceeded: false };
      }
    }
    return this.consumeShared(key, w);
  }

  /** Forgets every view, so the next request of each key asks the store (after a fallback switch). */
  forget(): void {
    this.windows.clear();
    this.dirty.clear();
  }

  /** Sends what is still pending and stops. */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    if (this.delayed !== undefined) this.schedule(false);
    while (this.flushing) await this.flushing;
  }

  /** Starts the next batch within a tick, or (`canWait`) within LOW_COUNT_DELAY_MS, unless one is on its way. */
  private schedule(canWait: boolean): void {
    // a batch being sent goes on while anything is dirty: what is counted now goes with it
    if (canWait) {
      if (!this.flushing) {
        this.delayed ??= setTimeout(() => {
          this.delayed = undefined;
          this.flushing ??= this.flushSoon();
        }, LOW_COUNT_DELAY_MS).unref();
      }
      return;
    }
    clearTimeout(this.delayed);
    this.delayed = undefined;
    this.flushing ??= this.flushSoon();
  }

  /** Waits for the store; this request goes with whatever the key has pending. */
  private async consumeShared(key: string, w: Window | undefined): Promise<Verdict> {
    const sending = 1 + (w?.pending ?? 0);
    if (w) {
      w.pending = 0;
      w.inFlight += sending;
      this.dirty.delete(key);
    }
    try {
      const verdict = await consumeNow(this.limiter, key, sending);
      this.learn(key, verdict);
      return verdict;
    } finally {
      if (w) w.inFlight -= sending;
    }
  }

  private async flushSoon(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (this.dirty.size > 0) {
      const batch = [...this.dirty];
      this.dirty.clear();
      await Promise.all(batch.map((key) => this.send(key)));
    }
    this.flushing = undefined;
  }

  private async send(key: string): Promise<void> {
    const w = this.windows.get(key);
    if (!w || w.pending === 0) return;
    const sending = w.pending;
    w.pending = 0;
    w.inFlight += sending;
    try {
      this.learn(key, await consumeNow(this.limiter, key, sending));
    } catch (err) {
      this.onSendError(err);
    } finally {
      w.inFlight -= sending;
    }
  }

  /** Takes in the store's answer: the count only grows within a window; a later end is a new one. */
  private learn(key: string, answer: Verdict & { consumed: number }): void {
    if (!this.shared()) return; // an insurance (per-process) answer is no view of the shared count
    const endsAt = Date.now() + answer.msBeforeNext;
    const w = this.windows.get(key);
    if (!w) {
      this.windows.set(key, { known: answer.consumed, inFlight: 0, pending: 0, endsAt });
    } else if (endsAt > w.endsAt + END_GUARD_MS) {
      w.known = answer.consumed;
      w.endsAt = endsAt;
    } else {
      w.known = Math.max(w.known, answer.consumed);
    }
  }

  private sweep(): void {
    const now = Date.now();
    for (const [key, w] of this.windows) if (w.endsAt < now && w.pending === 0 && w.inFlight === 0) this.windows.delete(key);
  }
}
