import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppContext, AppModule } from '../../app-context.ts';
import { apiVersionOf } from '../../http/api-version.ts';
import { errorResponses } from '../../http/errors.ts';
import { MAX_BUCKETS } from '../../http/validation.ts';
import { Stats, StatsQuery } from './stats.schemas.ts';
import { statsReader } from './stats.service.ts';

/** The administrators' overview (v2 only): figures read from the modules that own them, per hour or day. */
export function createStatsModule(ctx: AppContext): AppModule {
  const readStats = statsReader({ db: ctx.db, currency: ctx.config.currency, cacheSeconds: ctx.config.statsCacheSeconds });
  return {
    routes: (root) => {
      if (apiVersionOf(root) === 'v1') return;
      root.withTypeProvider<TypeBoxTypeProvider>().get('/admin/stats', {
        config: { auth: 'admin' as const },
        schema: {
          tags: ['admin'],
          summary: 'How the shop is doing: orders, revenue, short products, platform webhooks and deliveries per hour or day (administrators)',
          description:
            'Buckets are whole UTC hours or days from the one holding `from` to the one holding `to`, every one present (zeros too), ' +
            `oldest first. 422 when \`from\` is not before \`to\`, or the range holds more than ${MAX_BUCKETS} buckets. An answer may be ` +
            'up to STATS_CACHE_SECONDS (10 s) old: the same buckets asked again within that time are answered from memory.',
          querystring: StatsQuery,
          response: { 200: Stats, ...errorResponses(401, 403, 422, 429) },
        },
        handler: async (request) => readStats(request.query),
      });
    },
  };
}
