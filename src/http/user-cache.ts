import type { FastifyBaseLogger } from 'fastify';
import pg from 'pg';
import type { DatabaseHandle } from '../db/database.ts';
import type { UserRow } from '../db/schema.ts';

/** The channel the users trigger notifies on (migration 20261122000000_user_change_notify). */
export const USER_CHANGED_CHANNEL = 'oas_user_changed';

/**
 * The user rows that authenticate requests, kept in process memory, so an authenticated request
 * costs no database round trip for its caller (the benchmark showed that round trip to be the
 * largest single cost of a read). A change must still take effect at once:
 *
 * - a change made through this process (PATCH, DELETE, deactivation, password change) evicts the
 *   row as soon as its transaction has ended, before the response is sent;
 * - every change, wherever it is made (another API process, SQL by hand), reaches every process
 *   through the trigger's NOTIFY, a moment after it commits (see UserChangeFeed);
 * - while that feed is not listening (starting, reconnecting) nothing is cached or served from the
 *   cache, and losing the feed empties it;
 * - a read that raced an eviction is not cached (the epoch check), so a row read before a commit
 *   cannot be put back after the eviction for that commit;
 * - every entry expires after `ttlMs` (USER_CACHE_TTL_SECONDS; 0 turns the cache off), which bounds
 *   the staleness of a feed that died without anyone noticing.
 *
 * Bounded: the oldest entry makes room once `max` users are cached.
 *
 * The totals of the users list (`GET /users`, per `is_active` filter) are kept by the same rules:
 * any user change anywhere drops them all (the trigger fires on INSERT too). Counting a million
 * users on every request is what the list cost at scale otherwise (the bench: 3.6 s p95).
 */
export class UserCache {
  private readonly entries = new Map<number, { row: UserRow; expires: number }>();
  private readonly totals = new Map<string, { total: number; expires: number }>();
  private readonly ttlMs: number;
  private readonly max: number;
  private epoch = 0;
  private live = false;
  /** set by the change feed: see UserChangeFeed.barrier */
  settle: () => Promise<void> = async () => {};

  constructor(opts: { ttlMs: number; max?: number }) {
    this.ttlMs = opts.ttlMs;
    this.max = opts.max ?? 10_000;
  }

  get enabled(): boolean {
    return this.live && this.ttlMs > 0;
  }

  async get(id: number, load: (id: number) => Promise<UserRow | undefined>): Promise<UserRow | undefined> {
    if (this.enabled) {
      const hit = this.entries.get(id);
      if (hit && hit.expires > Date.now()) return hit.row;
      if (hit) this.entries.delete(id);
    }
    const epoch = this.epoch;
    const row = await load(id);
    if (row && this.enabled && epoch === this.epoch) {
      if (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value as number);
      this.entries.set(id, { row, expires: Date.now() + this.ttlMs });
    }
    return row;
  }

  /** A count of users kept under `key` (the list's filter), loaded by `count` when absent. */
  async total(key: string, count: () => Promise<number>): Promise<number> {
    const hit = this.enabled ? this.totals.get(key) : undefined;
    if (hit && hit.expires > Date.now()) return hit.total;
    const epoch = this.epoch;
    const total = await count();
    if (this.enabled && epoch === this.epoch) this.totals.set(key, { total, expires: Date.now() + this.ttlMs });
    return total;
  }

  evict(id: number): void {
    this.epoch++;
    this.entries.delete(id);
    this.totals.clear();
  }

  /** The change feed started listening (true) or was lost (false); either way start afresh. */
  setLive(live: boolean): void {
    this.live = live;
    this.epoch++;
    this.entries.clear();
    this.totals.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}

/**
 * Listens on USER_CHANGED_CHANNEL and evicts the users it names. On PostgreSQL it holds one
 * connection of its own (outside the pool), checked every few seconds and reconnected after a
 * failure; on PGlite it listens on the embedded instance.
 */
export class UserChangeFeed {
  private readonly cache: UserCache;
  private readonly database: DatabaseHandle;
  private readonly log: FastifyBaseLogger;
  private client: pg.Client | undefined;
  private unlisten: (() => Promise<void>) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Set while the feed is lost: its reconnect attempts fail each second, and only the loss and the return are told. */
  private lostSince: number | undefined;

  constructor(deps: { cache: UserCache; database: DatabaseHandle; log: FastifyBaseLogger }) {
    this.cache = deps.cache;
    this.database = deps.database;
    this.log = deps.log;
    this.cache.settle = () => this.barrier();
  }

  async start(): Promise<void> {
    const { pglite } = this.database;
    if (pglite) {
      this.unlisten = await pglite.listen(USER_CHANGED_CHANNEL, (payload) => this.cache.evict(Number(payload)));
      this.cache.setLive(true);
      return;
    }
    await this.connect().catch((err: unknown) => this.lost(undefined, err));
  }

  /**
   * Resolves once every change committed before the call has been applied to the cache (the
   * notifications arrive on the feed's connection ahead of the answer to this query).
   */
  async barrier(): Promise<void> {
    if (this.database.pglite) {
      await this.database.pglite.query('SELECT 1');
      await new Promise((resolve) => setImmediate(resolve));
      return;
    }
    await this.client?.query('SELECT 1');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.cache.setLive(false);
    await this.unlisten?.().catch(() => {});
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => {});
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.database.connectionString,
      connectionTimeoutMillis: 5000,
      query_timeout: 5000,
      keepAlive: true,
      application_name: 'oas-user-feed',
    });
    client.on('notification', (msg) => this.cache.evict(Number(msg.payload)));
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    await client.connect();
    await client.query(`LISTEN ${USER_CHANGED_CHANNEL}`);
    if (this.stopped) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    this.cache.setLive(true);
    if (this.lostSince !== undefined) {
      this.log.info({ unavailableSeconds: (Date.now() - this.lostSince) / 1000 }, 'user cache: change feed back, caching users again');
      this.lostSince = undefined;
    }
    this.schedule(() => this.check(client), 5000);
  }

  /** A connection can die without an error event (a silent network); a query notices. */
  private check(client: pg.Client): void {
    client.query('SELECT 1').then(
      () => this.client === client && this.schedule(() => this.check(client), 5000),
      (err: unknown) => this.lost(client, err),
    );
  }

  private lost(client: pg.Client | undefined, err?: unknown): void {
    if (client && this.client !== client && this.client !== undefined) return; // an old connection
    if (this.stopped) return;
    if (this.cache.enabled && this.lostSince === undefined) {
      this.lostSince = Date.now();
      const error = err instanceof Error ? err.message : err === undefined ? 'connection ended' : String(err);
      this.log.warn({ error }, 'user cache: change feed lost, serving users from the database until it is back');
    } else {
      this.log.debug({ err }, 'user cache: change feed still unavailable');
    }
    this.cache.setLive(false);
    this.client = undefined;
    client?.removeAllListeners('end');
    client?.on('error', () => {});
    client?.end().catch(() => {});
    this.schedule(() => {
      this.connect().catch((e: unknown) => this.lost(undefined, e));
    }, 1000);
  }

  private schedule(fn: () => void, ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(fn, ms);
    this.timer.unref();
  }
}
