import type { AppContext, AppModule } from '../../app-context.ts';
import { registerItemRoutes } from './items.routes.ts';
import { ItemsService } from './items.service.ts';

/** The owner-scoped item collection. */
export function createItemsModule(ctx: AppContext): AppModule {
  const service = new ItemsService({ db: ctx.db });
  return { routes: (api) => registerItemRoutes(api, service) };
}
