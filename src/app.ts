import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import formbody from '@fastify/formbody';
import cors from '@fastify/cors';
import crypto from 'node:crypto';
import pino from 'pino';
import type { AppContext, AppModule } from './app-context.ts';
import type { Config } from './config.ts';
import { createDatabase, type DatabaseHandle } from './db/database.ts';
import { migrateToLatest } from './db/migrate.ts';
import { AccessLogController } from './http/access-log.ts';
import { registerAuth } from './http/auth.ts';
import { UserCache, UserChangeFeed } from './modules/users/user-cache.ts';
import { API_PREFIX, registerDocs } from './http/docs.ts';
import { frameworkErrors, registerErrorHandling } from './http/errors.ts';
import { registerObservability } from './http/observability.ts';
import { registerPathIds } from './http/path-ids.ts';
import { registerRateLimit } from './http/rate-limit.ts';
import { registerSecurity, serverLimits } from './http/security.ts';
import { registerSecurityHeaders } from './http/security-headers.ts';
import { registerValidation } from './http/validation.ts';
import { JobQueue } from './jobs/queue.ts';
import { createMailer } from './mail/mailer.ts';
import { accountsModule } from './modules/auth/auth.module.ts';
import { itemsModule } from './modules/items/items.module.ts';
import { ordersModule } from './modules/orders/orders.module.ts';
import { productsModule } from './modules/products/products.module.ts';
import { webhooksModule } from './modules/webhooks/webhooks.module.ts';
import { Jwks } from './modules/auth/auth.schemas.ts';
import { PasswordHasher } from './modules/auth/passwords.ts';
import { TokenService } from './modules/auth/token.service.ts';
import { OrderEventBus } from './modules/orders/order-events.ts';

declare module 'fastify' {
  interface FastifyInstance {
    ctx: AppContext;
  }
}

/** The modules of the service, registered in this order under /api/v1. */
const MODULES: AppModule[] = [accountsModule, productsModule, ordersModule, itemsModule, webhooksModule];

let stdoutDestination: pino.DestinationStream | undefined;

/**
 * The process's log destination when stdout is not a terminal: asynchronous, so a busy process does
 * not make a system call per line. Lines written while a write is in flight go out together in the
 * next one (at rest each line is written at once), and pino flushes what is pending synchronously
 * when the process exits. (Measured, this saved little next to the redaction the access log now
 * skips: bench finding 22.) One per process: every app built in it shares it.
 */
function stdoutLog(): pino.DestinationStream {
  stdoutDestination ??= pino.destination({ dest: 1, sync: false });
  return stdoutDestination;
}

/** The service logger's options, and the controller that writes its per-request lines. */
function loggerOptions(
  config: Config,
  stream: { write(msg: string): void } | undefined,
): Pick<FastifyServerOptions, 'logger' | 'logController'> {
  const logger = {
    level: config.logLevel,
    // secrets never reach the logs, whatever a serializer or a handler decides to log
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'req.headers["x-shopify-hmac-sha256"]',
        'headers.authorization',
        '*.password',
        '*.new_password',
        '*.current_password',
        '*.refresh_token',
        '*.access_token',
        '*.secret',
        '*.password_hash',
      ],
      censor: '[redacted]',
    },
  };
  // a terminal gets pino-pretty (a worker thread of its own), and the access lines through it
  if (!stream && process.stdout.isTTY && config.logLevel !== 'silent') {
    return { logger: { ...logger, transport: { target: 'pino-pretty' } }, logController: new AccessLogController() };
  }
  const destination = stream ?? stdoutLog();
  return { logger: { ...logger, stream: destination }, logController: new AccessLogController(pino({ level: config.logLevel }, destination)) };
}

export interface BuildOptions {
  /** reuse an existing database handle (tests that share one); closed by the caller then */
  database?: DatabaseHandle;
  /** write the JSON log lines here instead of stdout (tests that inspect the logs) */
  logStream?: { write(msg: string): void };
}

/** Builds the whole service: database (migrated), queue (started), every module registered. */
export async function buildApp(config: Config, opts: BuildOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    ...loggerOptions(config, opts.logStream),
    ...serverLimits(config),
    // TRUST_PROXY=true trusts the immediate peer only: the client IP is the X-Forwarded-For entry
    // the balancer appended, never one a client wrote into the header itself (Fastify's own `true`
    // trusts every hop, so the left-most entry, which the client controls, would be the key)
    trustProxy: config.trustProxy === true ? (_address: string, hop: number) => hop === 0 : config.trustProxy,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    frameworkErrors,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,64}$/.test(given) ? given : crypto.randomUUID();
    },
  });

  const database =
    opts.database ??
    (await createDatabase({
      databaseUrl: config.databaseUrl,
      dataDir: config.dataDir,
      applicationName: `oas-${config.role}`,
      preparedStatements: config.databasePreparedStatements,
    }));
  try {
    await migrateToLatest(database.db);
  } catch (err) {
    if (!opts.database) await database.close();
    throw err;
  }
  const tokens = await TokenService.create(config);
  const queue = new JobQueue(database, config, app.log);
  const mailer = createMailer(config);
  const userCache = new UserCache({ ttlMs: config.userCacheTtlSeconds * 1000 });
  const userFeed = new UserChangeFeed({ cache: userCache, database, log: app.log });
  const ctx: AppContext = {
    config,
    db: database.db,
    database,
    queue,
    tokens,
    mailer,
    hasher: new PasswordHasher(config.bcryptRounds),
    log: app.log,
    orderEvents: new OrderEventBus(),
    userCache,
    readiness: [],
  };
  app.decorate('ctx', ctx);

  registerValidation(app);
  registerErrorHandling(app);
  // Response headers and CORS first: their onRequest hooks then run before rate limiting and
  // authentication, so a 401 or 429 carries them too (a browser app can read it), and CORS
  // preflights are answered before anything asks for a token. The preflight route of @fastify/cors
  // is registered before the auth check exists; it only ever answers 204 or 404.
  registerSecurityHeaders(app, {
    // the docs page loads its own scripts and styles; the API itself serves only JSON
    contentSecurityPolicy: false,
    crossOriginEmbedderPolicy: false,
  });
  if (config.corsOrigins.length > 0) await app.register(cors, { origin: [...config.corsOrigins], credentials: false });
  // before authentication: rejected requests count too (see rate-limit.ts)
  registerRateLimit(app, ctx);
  registerAuth(app, { db: ctx.db, tokens, userCache });
  registerSecurity(app);
  registerPathIds(app);
  await app.register(formbody, { bodyLimit: config.bodyLimitBytes });
  await registerDocs(app);
  ctx.readiness.push(
    { name: 'database', critical: true, check: async () => (await database.ping(), 'ok') },
    { name: 'queue', critical: true, check: async () => (await queue.ping(), 'ok') },
  );
  // the same array: checks that modules add later are part of /ready too
  registerObservability(app, ctx.readiness);
  if (tokens.asymmetric) {
    app.get('/.well-known/jwks.json', {
      config: { auth: 'public', rateLimit: 'none' },
      schema: { tags: ['auth'], summary: 'Public keys that verify access tokens', response: { 200: Jwks } },
      handler: async () => tokens.jwks(),
    });
  }

  await app.register(
    async (api) => {
      for (const register of MODULES) await register(api, ctx);
    },
    { prefix: API_PREFIX },
  );

  // Shutting down, server.close() waits for every connection to end, but closes only the ones idle at
  // that moment. A connection still serving a request then stays open as an idle keep-alive socket
  // for as long as the client likes (undici honours our 72 s keep-alive hint), past the grace period.
  // So until the server has closed, connections are closed as soon as they fall idle.
  let idleSweep: NodeJS.Timeout | undefined;
  app.addHook('preClose', async () => {
    idleSweep = setInterval(() => app.server.closeIdleConnections(), 100);
    idleSweep.unref();
  });
  app.addHook('onClose', async () => {
    clearInterval(idleSweep);
    await queue.stop();
    await userFeed.stop();
    mailer.close();
    if (!opts.database) await database.close();
  });

  try {
    // only processes that serve requests authenticate users
    if (config.role !== 'worker' && config.userCacheTtlSeconds > 0) await userFeed.start();
    await queue.start();
  } catch (err) {
    await app.close();
    throw err;
  }
  return app;
}
