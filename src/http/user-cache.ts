import type { FastifyBaseLogger } from 'fastify';
import pg from 'pg';
import type { DatabaseHandle } from '../db/database.ts';
import { isDatabaseUnavailable } from '../db/errors.ts';
import type { UserRow } from '../db/schema.ts';

/** The channel the users trigger notifies on (migration 20261122000000_user_change_notify). */
const USER_CHANGED_CHANNEL = 'oas_user_changed';
const MAX_USERS = 10_000;

interface Entry<V> {
  value: V;
  expires: number;
}

/**
 * The user rows that authenticate requests, and the users list's totals, in memory, yet a change takes effect at
 * once: this process evicts its own changes before responding; the trigger's NOTIFY brings every change to every
 * process (UserChangeFeed) and drops all totals; nothing is cached while the feed is not listening; a read that
 * raced an eviction is not cached (the epoch); entries expire after `ttlMs` (0: off), bounding the staleness of a
 * feed that died unnoticed. At most MAX_USERS users, the oldest out first.
 */
export class UserCache {
  private readonly entries = new Map<number, Entry<UserRow>>();
  private readonly totals = new Map<string, Entry<number>>();
  private readonly ttlMs: number;
  private epoch = 0;
  private live = false;
  /** set by the change feed: see UserChangeFeed.barrier */
  settle: () => Promise<void> = async () => {};

  constructor(opts: { ttlMs: number }) {
    this.ttlMs = opts.ttlMs;
  }

  get enabled(): boolean {
    return this.live && this.ttlMs > 0;
  }

  get(id: number, load: (id: number) => Promise<UserRow | undefined>): Promise<UserRow | undefined> {
    return this.cached(this.entries, id, () => load(id), MAX_USERS);
  }

  /** A count of users kept under `key` (the list's filter), loaded by `count` when absent. */
  total(key: string, count: () => Promise<number>): Promise<number> {
    return this.cached(this.totals, key, count, Infinity) as Promise<number>;
  }

  private async cached<K, V>(map: Map<K, Entry<V>>, key: K, load: () => Promise<V | undefined>, max: number): Promise<V | undefined> {
    if (this.enabled) {
      const hit = map.get(key);
      if (hit && hit.expires > Date.now()) return hit.value;
      if (hit) map.delete(key);
    }
    const epoch = this.epoch;
    const value = await load();
    if (value !== undefined && this.enabled && epoch === this.epoch) {
      if (map.size >= max) map.delete(map.keys().next().value as K);
      map.set(key, { value, expires: Date.now() + this.ttlMs });
    }
    return value;
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

/** Evicts the users USER_CHANGED_CHANNEL names: on PGlite's instance, or over a checked, reconnecting PostgreSQL connection of its own. */
export class UserChangeFeed {
  private readonly deps: {
    cache: UserCache;
    database: DatabaseHandle;
    log: FastifyBaseLogger;
    /** the process's one line per database outage (queue.ts): a feed lost to an outage adds none of its own */
    databaseOutage?: { failed(err: unknown, source: string): void };
  };
  private client: pg.Client | undefined;
  private unlisten: (() => Promise<void>) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** set while the feed is lost: only the loss and the return are logged, not each failed reconnect */
  private lostSince: number | undefined;
  /** the loss was the database's outage, which the outage log reports: the feed's own lines are debug */
  private lostToOutage = false;

  constructor(deps: UserChangeFeed['deps']) {
    this.deps = deps;
    deps.cache.settle = () => this.barrier();
  }

  async start(): Promise<void> {
    const { pglite } = this.deps.database;
    if (pglite) {
      this.unlisten = await pglite.listen(USER_CHANGED_CHANNEL, (payload) => this.deps.cache.evict(Number(payload)));
      this.deps.cache.setLive(true);
      return;
    }
    await this.connect().catch((err: unknown) => this.lost(undefined, err));
  }

  /** Resolves once every change committed before the call is applied (its notifications precede this query's answer). */
  async barrier(): Promise<void> {
    if (this.deps.database.pglite) {
      await this.deps.database.pglite.query('SELECT 1');
      await new Promise((resolve) => setImmediate(resolve));
      return;
    }
    await this.client?.query('SELECT 1');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.deps.cache.setLive(false);
    await this.unlisten?.().catch(() => {});
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => {});
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.deps.database.connectionString,
      connectionTimeoutMillis: 5000,
      query_timeout: 5000,
      keepAlive: true,
      application_name: 'oas-user-feed',
    });
    client.on('notification', (msg) => this.deps.cache.evict(Number(msg.payload)));
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    await client.connect();
    await client.query(`LISTEN ${USER_CHANGED_CHANNEL}`);
    if (this.stopped) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    this.deps.cache.setLive(true);
    if (this.lostSince !== undefined) {
      const level = this.lostToOutage ? 'debug' : 'info';
      this.deps.log[level]({ unavailableSeconds: (Date.now() - this.lostSince) / 1000 }, 'user cache: change feed back, caching users again');
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
    const outage = err !== undefined && isDatabaseUnavailable(err) && this.deps.databaseOutage;
    if (outage) outage.failed(err, 'user cache');
    if (this.deps.cache.enabled && this.lostSince === undefined) {
      this.lostSince = Date.now();
      this.lostToOutage = Boolean(outage);
      const error = err instanceof Error ? err.message : err === undefined ? 'connection ended' : String(err);
      this.deps.log[outage ? 'debug' : 'warn']({ error }, 'user cache: change feed lost, serving users from the database until it is back');
    } else {
      this.deps.log.debug({ err }, 'user cache: change feed still unavailable');
    }
    this.deps.cache.setLive(false);
    this.client = undefined;
    client?.removeAllListeners('end');
    client?.on('error', () => {});
    client?.end().catch(() => {});
    this.schedule(() => void this.connect().catch((e: unknown) => this.lost(undefined, e)), 1000);
  }

  private schedule(fn: () => void, ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(fn, ms);
    this.timer.unref();
  }
}
