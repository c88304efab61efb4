import type { AppModule } from '../../app-context.ts';
import { registerItemRoutes } from './items.routes.ts';
import { ItemsService } from './items.service.ts';

/** The owner-scoped item collection. */
export const itemsModule: AppModule = (api, ctx) => {
  registerItemRoutes(api, new ItemsService({ db: ctx.db }));
};
