import type { AppContext, AppModule } from '../../app-context.ts';
import { registerStatsRoutes } from './stats.routes.ts';
import { StatsService } from './stats.service.ts';

/** The administrators' overview: figures read from the modules that own them, per hour or day. */
export function createStatsModule(ctx: AppContext): AppModule {
  const service = new StatsService({ db: ctx.db, currency: ctx.config.currency, cacheSeconds: ctx.config.statsCacheSeconds });
  return { routes: (api) => registerStatsRoutes(api, service) };
}
