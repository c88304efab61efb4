import { trace } from '@opentelemetry/api';
import Fastify, { type FastifyInstance } from 'fastify';
import formbody from '@fastify/formbody';
import cors from '@fastify/cors';
import type { AppContext, AppModule } from './app-context.ts';
import type { Config } from './config.ts';
import type { DatabaseHandle } from './db/database.ts';
import { describeDatabase, openDatabase } from './db/migrate.ts';
import { OrderEventBus } from './events/order-events.ts';
import { registerAuth } from './http/auth.ts';
import { API_VERSIONS, apiPrefix } from './http/api-version.ts';
import { registerBodyLimits } from './http/body-limits.ts';
import { registerConsole } from './http/console.ts';
import { registerDocs } from './http/docs.ts';
import { registerErrorHandling } from './http/error-handling.ts';
import { registerObservability } from './http/observability.ts';
import { registerPathIds } from './http/path-ids.ts';
import { createCounterRedis, registerRateLimit } from './http/rate-limits.ts';
import { registerHostRequirement, registerSecurity } from './http/security.ts';
import { registerNoStore, registerSecurityHeaders } from './http/security-headers.ts';
import { closeConnectionsWhileDraining, closeIdleConnectionsOnShutdown, serverOptions } from './http/server.ts';
import { UserCache, UserChangeFeed } from './http/user-cache.ts';
import { registerValidation } from './http/validation.ts';
import { JobQueue } from './jobs/queue.ts';
import { createMailer } from './mail/mailer.ts';
import { createAuthModule } from './modules/auth/auth.module.ts';
import { createInboundWebhooksModule } from './modules/inbound-webhooks/inbound-webhooks.module.ts';
import type { InboundProcessHooks } from './modules/inbound-webhooks/inbound-webhooks.service.ts';
import { createItemsModule } from './modules/items/items.module.ts';
import { createLiveModule, type LiveOptions } from './modules/live/live.module.ts';
import { createOperationsModule } from './modules/operations/operations.module.ts';
import type { OrderProcessorHooks } from './modules/orders/order-processor.ts';
import { createOrdersModule } from './modules/orders/orders.module.ts';
import { createOutboundWebhooksModule } from './modules/outbound-webhooks/outbound-webhooks.module.ts';
import type { Resolver } from './modules/outbound-webhooks/ssrf.ts';
import { createProductsModule } from './modules/products/products.module.ts';
import { createStatsModule } from './modules/stats/stats.module.ts';
import { createUsersModule } from './modules/users/users.module.ts';

declare module 'fastify' {
  interface FastifyInstance {
    ctx: AppContext;
  }
}

export interface BuildOptions {
  /** reuse an existing database handle (tests that share one); closed by the caller then */
  database?: DatabaseHandle;
  /** write the JSON log lines here instead of stdout (tests that inspect the logs) */
  logStream?: { write(msg: string): void };
  /** fault injection into the background jobs (tests); read on every run, so a test may change them */
  hooks?: { orderProcessing?: OrderProcessorHooks; inboundProcessing?: InboundProcessHooks };
  /** the name resolver behind outgoing deliveries' SSRF guard (tests: names that resolve to internal addresses) */
  webhookResolver?: Resolver;
  /** the built console to serve at /console (default build/console; tests build their own) */
  consoleDir?: string;
  /** the live event stream's timings and limits (tests: a short heartbeat) */
  live?: LiveOptions;
}

/** Builds the whole service: database (migrated), queue (started), every module registered. */
export async function buildApp(config: Config, opts: BuildOptions = {}): Promise<FastifyInstance> {
  const app = Fastify(serverOptions(config, opts.logStream));
  const { database, applied } = await openDatabase(config, opts.database);
  app.log.info(`database: ${describeDatabase(config)}; role ${config.role}`);
  app.log.info({ migrations: applied }, applied.length > 0 ? `migrations applied: ${applied.length} (${applied.join(', ')})` : 'migrations: the database is up to date');
  const ctx: AppContext = {
    config,
    db: database.db,
    database,
    queue: new JobQueue(database, config, app.log),
    mailer: createMailer(config),
    log: app.log,
    orderEvents: new OrderEventBus(),
    userCache: new UserCache({ ttlMs: config.userCacheTtlSeconds * 1000 }),
    readiness: [],
    counters: config.redisUrl ? createCounterRedis(config.redisUrl, app.log) : undefined,
  };
  app.decorate('ctx', ctx);
  const userFeed = new UserChangeFeed({ cache: ctx.userCache, database, log: app.log, databaseOutage: ctx.queue.databaseOutage });

  // The domain, in the order its routes appear under each API version and in the OpenAPI documents.
  const users = createUsersModule(ctx);
  const auth = await createAuthModule(ctx, { users });
  const orders = createOrdersModule(ctx, { hooks: opts.hooks?.orderProcessing });
  const inbound = createInboundWebhooksModule(ctx, { orders, users, hooks: opts.hooks?.inboundProcessing });
  const operations = createOperationsModule(ctx, { orders });
  const modules: AppModule[] = [
    auth,
    users,
    await createProductsModule(ctx),
    orders,
    createItemsModule(ctx),
    inbound,
    createOutboundWebhooksModule(ctx, { resolve: opts.webhookResolver }),
    operations,
    createStatsModule(ctx),
    createLiveModule(ctx, { loadUser: users.loadUser }, opts.live),
  ];

  // The request pipeline. Response headers and CORS come before rate limiting and authentication,
  // so a 401 or 429 carries them too and preflights are answered before anything asks for a token.
  registerValidation(app);
  registerErrorHandling(app, { storage: database.storage, databaseOutage: ctx.queue.databaseOutage });
  // spans named by route template (grouped by endpoint), first so a request a later hook rejects has its route
  if (config.otelEndpoint) {
    app.addHook('onRequest', async (request) => {
      const span = trace.getActiveSpan();
      if (!span?.isRecording()) return;
      const route = request.routeOptions.url ?? 'unmatched';
      span.setAttribute('http.route', route);
      span.updateName(`${request.method} ${route}`);
    });
  }
  // the docs page loads its own scripts and styles; the API itself serves only JSON
  registerSecurityHeaders(app, { contentSecurityPolicy: false, crossOriginEmbedderPolicy: false });
  closeConnectionsWhileDraining(app);
  registerNoStore(app, API_VERSIONS.map(apiPrefix));
  registerHostRequirement(app);
  // CORS for the browser applications, exposing the rate-limit headers. No credentials: a cross-origin
  // application sends its device token as X-Device-Token, since the `device` cookie is SameSite=Strict
  if (config.corsOrigins.length > 0) {
    await app.register(cors, {
      origin: [...config.corsOrigins],
      credentials: false,
      methods: ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE', 'OPTIONS'],
      allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'X-Request-Id', 'X-Device-Token'],
      exposedHeaders: ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'Retry-After'],
      maxAge: 600,
    });
  }
  // before authentication: rejected requests count too (see rate-limits.ts)
  await registerRateLimit(app, { config, verifyAccessToken: auth.verifyAccessToken, readiness: ctx.readiness, counters: ctx.counters });
  registerAuth(app, { verifyAccessToken: auth.verifyAccessToken, loadUser: users.loadUser, userCache: ctx.userCache });
  // before registerSecurity: the route table records each route's limit
  registerBodyLimits(app, { maxBytes: config.bodyLimitBytes });
  registerSecurity(app);
  registerPathIds(app);
  await app.register(formbody, { bodyLimit: config.bodyLimitBytes });
  // a worker serves HTTP only for its own /health, /ready and /metrics (METRICS_PORT)
  const servesApi = config.role !== 'worker';
  if (servesApi) await registerDocs(app);
  if (servesApi) registerConsole(app, { dir: opts.consoleDir, currency: config.currency });

  // Operations, and the routes.
  ctx.readiness.push(
    { name: 'database', critical: true, check: async () => (await database.ping(), 'ok') },
    { name: 'queue', critical: true, check: async () => (await ctx.queue.ping(), 'ok') },
  );
  const metrics = registerObservability(app, ctx.readiness, { metricsToken: config.metricsToken });
  operations.registerMetrics(metrics);
  for (const module of modules) if (servesApi) module.rootRoutes?.(app);
  // Every version serves every module's routes; a route reads its scope's version for schemas and mappers.
  for (const version of servesApi ? API_VERSIONS : []) {
    await app.register(
      async (api) => {
        api.decorate('apiVersion', version);
        for (const module of modules) await module.routes?.(api);
      },
      { prefix: apiPrefix(version) },
    );
  }

  // Shutdown: connections drain, then jobs, the user feed, the modules' own resources, the pools.
  closeIdleConnectionsOnShutdown(app);
  app.addHook('onClose', async () => {
    await ctx.queue.stop();
    await userFeed.stop();
    for (const module of modules) await module.close?.();
    await ctx.counters?.close();
    ctx.mailer.close();
    if (!opts.database) await database.close();
  });

  try {
    // only processes that serve requests authenticate users
    if (config.role !== 'worker' && config.userCacheTtlSeconds > 0) await userFeed.start();
    const takenUp = await ctx.queue.start();
    if (config.role !== 'api') {
      const counts = Object.entries(takenUp).map(([queue, n]) => `${queue} ${n}`).join(', ');
      const none = database.pglite ? 'none' : "none at start-up (a dead worker's jobs are retried once their heartbeat lapses)";
      app.log.info({ jobsTakenUp: takenUp }, `jobs taken up again after a crash: ${counts || none}`);
    }
  } catch (err) {
    await app.close();
    throw err;
  }
  return app;
}
