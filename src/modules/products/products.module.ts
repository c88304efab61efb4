import type { AppContext, AppModule } from '../../app-context.ts';
import { seedProductsIfEmpty } from './products.repository.ts';
import { registerProductRoutes } from './products.routes.ts';
import { DEMO_CATALOG } from './products.seed.ts';

/** The product catalogue that orders are placed against (and the demo catalogue, when configured). */
export async function createProductsModule(ctx: AppContext): Promise<AppModule> {
  if (ctx.config.seedDemoCatalog) {
    const seeded = await seedProductsIfEmpty(ctx.db, DEMO_CATALOG);
    if (seeded > 0) ctx.log.info({ products: seeded }, 'seeded the demo catalogue');
  }
  return { routes: (api) => registerProductRoutes(api, ctx.db) };
}
