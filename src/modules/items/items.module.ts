import type { AppContext, AppModule } from '../../app-context.ts';
import { registerItemRoutes } from './items.routes.ts';

/** The owner-scoped item collection: only the owner may read, change or delete an item. */
export function createItemsModule(ctx: AppContext): AppModule {
  return { routes: (api) => registerItemRoutes(api, ctx.db) };
}
