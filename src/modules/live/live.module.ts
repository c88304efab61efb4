import type { UserRow } from '../../db/schema.ts';
import type { AppContext, AppModule } from '../../app-context.ts';
import { OrderEventFeed } from './event-feed.ts';
import { registerLiveRoutes, type LiveLimits } from './live.routes.ts';

export interface LiveOptions extends Partial<LiveLimits> {
  /** how often the outbox is read while a stream is open (ms) */
  pollMs?: number;
}

/** Live order events (GET /api/v2/events): one outbox reader per process for every open stream. */
export function createLiveModule(
  ctx: AppContext,
  deps: { loadUser: (id: number) => Promise<UserRow | undefined> },
  opts: LiveOptions = {},
): AppModule {
  const feed = new OrderEventFeed({ db: ctx.db, log: ctx.log, pollMs: opts.pollMs ?? 250 });
  const limits: LiveLimits = {
    heartbeatMs: opts.heartbeatMs ?? 15_000,
    streamsPerUser: opts.streamsPerUser ?? 5,
    replayLimit: opts.replayLimit ?? 1000,
  };
  return {
    routes: (api) => registerLiveRoutes(api, { feed, limits, userCache: ctx.userCache, loadUser: deps.loadUser }),
    close: () => feed.close(),
  };
}
