import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { apiVersionOf } from '../../http/api-version.ts';
import { errorResponses } from '../../http/errors.ts';
import { MAX_BUCKETS, Stats, StatsQuery } from './stats.schemas.ts';
import type { StatsService } from './stats.service.ts';

/** The administrators' overview figures (v2 only). */
export function registerStatsRoutes(root: FastifyInstance, stats: StatsService): void {
  if (apiVersionOf(root) === 'v1') return;
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  app.get('/admin/stats', {
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
    handler: async (request) => stats.read(request.query),
  });
}
