import path from 'node:path';
import { bool, ConfigError, currency, int, list, LOG_LEVELS, metricsToken, num, oneOf, resetUrlTemplate, signingKey, str, trustProxy, url, type Env } from './config-values.ts';

export { ConfigError } from './config-values.ts';

const DEFAULT_WEBHOOK_RETRY_SCHEDULE: readonly number[] = Object.freeze([5, 300, 1800, 7200, 18000, 36000, 36000]);

/** The settings, validated; the type of Config is what this returns. */
function readEnv(env: Env) {
  const role = (str(env, 'ROLE') ?? 'all').toLowerCase() as 'api' | 'worker' | 'all';
  if (!['api', 'worker', 'all'].includes(role)) {
    throw new ConfigError(`ROLE must be api, worker or all, got "${role}"`);
  }
  const databaseUrl = str(env, 'DATABASE_URL');
  if (databaseUrl !== undefined && databaseUrl !== ':memory:') url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']);
  const jwtSecret = str(env, 'JWT_SECRET');
  if (jwtSecret !== undefined && Buffer.byteLength(jwtSecret) < 32) {
    throw new ConfigError('JWT_SECRET must be at least 32 bytes');
  }
  const jwtPrivateKey = signingKey(env, 'JWT_PRIVATE_KEY', 'private');
  const jwtPreviousPublicKey = signingKey(env, 'JWT_PREVIOUS_PUBLIC_KEY', 'public');
  const adminEmail = str(env, 'ADMIN_EMAIL');
  const adminPassword = str(env, 'ADMIN_PASSWORD');
  if ((adminEmail === undefined) !== (adminPassword === undefined)) {
    throw new ConfigError('ADMIN_EMAIL and ADMIN_PASSWORD must be set together');
  }
  if (adminPassword !== undefined && (adminPassword.length < 8 || Buffer.byteLength(adminPassword) > 72)) {
    throw new ConfigError('ADMIN_PASSWORD must be 8 to 72 bytes long');
  }
  const schedule = str(env, 'WEBHOOK_RETRY_SCHEDULE');
  let webhookRetrySchedule = DEFAULT_WEBHOOK_RETRY_SCHEDULE;
  if (schedule !== undefined) {
    const texts = schedule.split(',').map((s) => s.trim());
    // an empty part ("5,,300") is a typo, not a retry after 0 s
    if (texts.some((t) => !/^\d+(\.\d+)?$/.test(t))) {
      throw new ConfigError('WEBHOOK_RETRY_SCHEDULE must be a comma-separated list of seconds');
    }
    webhookRetrySchedule = Object.freeze(texts.map(Number));
  }
  // the embedded database, on disk or (tests) in memory: it serves one process only
  const embedded = databaseUrl === undefined || databaseUrl === ':memory:';
  if ((str(env, 'PLATFORM_API_URL') === undefined) !== (str(env, 'PLATFORM_API_TOKEN') === undefined)) {
    throw new ConfigError('PLATFORM_API_URL and PLATFORM_API_TOKEN must be set together');
  }

  return {
    port: int(env, 'PORT', 8000, 0, 65535),
    /** ROLE=worker: where its /health, /ready and /metrics are served (unset: it serves no HTTP) */
    metricsPort: str(env, 'METRICS_PORT') === undefined ? undefined : int(env, 'METRICS_PORT', 0, 1, 65535),
    host: str(env, 'HOST') ?? '127.0.0.1',
    dataDir: path.resolve(str(env, 'DATA_DIR') ?? './data'),
    /** unset → embedded PGlite under dataDir; ':memory:' → in-memory PGlite (tests) */
    databaseUrl,
    /** off behind a transaction-pooling proxy */
    databasePreparedStatements: bool(env, 'DATABASE_PREPARED_STATEMENTS', true),
    /** per process; pg-boss has its own pool (jobQueuePoolSize) */
    databasePoolSize: int(env, 'DATABASE_POOL_SIZE', 20, 1, 1000),
    jobQueuePoolSize: int(env, 'JOB_QUEUE_POOL_SIZE', 10, 2, 1000),
    embeddedSharedBuffersMb: int(env, 'EMBEDDED_SHARED_BUFFERS_MB', 16, 1, 4096),
    redisUrl: url(env, 'REDIS_URL', ['redis:', 'rediss:']),
    role,
    adminEmail,
    adminPassword,
    seedDemoCatalog: bool(env, 'SEED_DEMO_CATALOG', embedded),
    jwtPrivateKey,
    jwtPreviousPublicKey,
    jwtSecret,
    jwtIssuer: str(env, 'JWT_ISSUER') ?? 'order-account-service',
    jwtAudience: str(env, 'JWT_AUDIENCE') ?? 'order-account-service',
    accessTokenTtlSeconds: int(env, 'ACCESS_TOKEN_TTL_SECONDS', 1800, 1),
    refreshTokenTtlSeconds: int(env, 'REFRESH_TOKEN_TTL_SECONDS', 604800, 1),
    bcryptRounds: int(env, 'BCRYPT_ROUNDS', 12, 4, 15),
    passwordResetTtlSeconds: int(env, 'PASSWORD_RESET_TTL_SECONDS', 1800, 1, 7 * 86400),
    /** the reset e-mail's link template with `{token}`; unset: the e-mail gives the token and the API call */
    passwordResetUrl: resetUrlTemplate(env),
    loginThrottleMaxFailures: int(env, 'LOGIN_THROTTLE_MAX_FAILURES', 10, 1),
    loginThrottleWindowSeconds: int(env, 'LOGIN_THROTTLE_WINDOW_SECONDS', 900, 1),
    /** failed logins for one e-mail from all clients together; unset: 10 × loginThrottleMaxFailures */
    loginThrottleMaxFailuresPerEmail: str(env, 'LOGIN_THROTTLE_MAX_FAILURES_PER_EMAIL') === undefined ? undefined : int(env, 'LOGIN_THROTTLE_MAX_FAILURES_PER_EMAIL', 0, 1),
    rateLimitAuthenticated: int(env, 'RATE_LIMIT_AUTHENTICATED', 100, 1),
    rateLimitAnonymous: int(env, 'RATE_LIMIT_ANONYMOUS', 20, 1),
    rateLimitWebhook: int(env, 'RATE_LIMIT_WEBHOOK', 1000, 1),
    rateLimitWindowSeconds: int(env, 'RATE_LIMIT_WINDOW_SECONDS', 60, 1),
    rateLimitKeyPrefix: str(env, 'RATE_LIMIT_KEY_PREFIX') ?? 'oas:rl',
    /** false: X-Forwarded-For ignored; true: only the immediate peer is trusted; a string: trusted proxies (proxy-addr syntax) */
    trustProxy: trustProxy(env),
    corsOrigins: Object.freeze(list(str(env, 'CORS_ORIGINS'))),
    shopifyWebhookSecret: str(env, 'SHOPIFY_WEBHOOK_SECRET'),
    platformApiUrl: url(env, 'PLATFORM_API_URL', ['http:', 'https:']),
    platformApiToken: str(env, 'PLATFORM_API_TOKEN'),
    webhookAllowPrivateTargets: bool(env, 'WEBHOOK_ALLOW_PRIVATE_TARGETS', false),
    /** delays in seconds between outgoing delivery attempts; length + 1 = max attempts */
    webhookRetrySchedule,
    webhookMaxSubscriptionsPerUser: int(env, 'WEBHOOK_MAX_SUBSCRIPTIONS_PER_USER', 25, 1, 10000),
    /** deliveries in flight at once to one destination, per worker process */
    webhookMaxConcurrencyPerHost: int(env, 'WEBHOOK_MAX_CONCURRENCY_PER_HOST', 4, 1, 64),
    smtpUrl: url(env, 'SMTP_URL', ['smtp:', 'smtps:']),
    mailFrom: str(env, 'MAIL_FROM') ?? 'Order Service <no-reply@example.com>',
    bodyLimitBytes: int(env, 'BODY_LIMIT_BYTES', 1024 * 1024, 1024),
    requestTimeoutMs: int(env, 'REQUEST_TIMEOUT_MS', 30000, 100, 600000),
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    /** an idle worker's polls of each queue, for retries and delayed jobs (new jobs wake it by NOTIFY) */
    jobPollingSeconds: num(env, 'JOB_POLLING_SECONDS', 2, 0.5),
    // PGlite runs one transaction at a time: more jobs at once would only queue in front of requests
    orderWorkerConcurrency: int(env, 'ORDER_WORKER_CONCURRENCY', embedded ? 4 : 12, 1, 64),
    /** how long an API process may serve a user row from memory (0: never); see user-cache.ts */
    userCacheTtlSeconds: num(env, 'USER_CACHE_TTL_SECONDS', 10, 0),
    webConcurrency: int(env, 'WEB_CONCURRENCY', 1, 1, 64),
    webhookMessageRetentionDays: int(env, 'WEBHOOK_MESSAGE_RETENTION_DAYS', 30, 0, 3650),
    inboundPayloadRetentionDays: int(env, 'INBOUND_PAYLOAD_RETENTION_DAYS', 30, 0, 3650),
    jobRetentionDays: int(env, 'JOB_RETENTION_DAYS', 7, 0, 3650),
    metricsCacheSeconds: num(env, 'METRICS_CACHE_SECONDS', 5, 0),
    /** how long an API process reuses an answer of GET /admin/stats for the same range (0: never) */
    statsCacheSeconds: num(env, 'STATS_CACHE_SECONDS', 10, 0),
    /** the OTLP traces endpoint; unset: no tracing, the SDK not loaded (it reads the other OTEL_* itself) */
    otelEndpoint: url(env, 'OTEL_EXPORTER_OTLP_ENDPOINT', ['http:', 'https:']) ?? url(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', ['http:', 'https:']),
    otelServiceName: str(env, 'OTEL_SERVICE_NAME') ?? 'order-account-service',
    /** when set, /metrics answers only `Authorization: Bearer <token>` */
    metricsToken: metricsToken(env),
    inboundReplayWindowSeconds: int(env, 'INBOUND_REPLAY_WINDOW_SECONDS', 86400, 0, 30 * 86400),
    /** the currency of every amount (orders, revenue); the API states it, the console formats with it */
    currency: currency(env),
  };
}

export type Config = Readonly<ReturnType<typeof readEnv>>;

/** Reads the environment once, validates every value and returns a frozen Config. */
export function loadConfig(env: Env = process.env, overrides: Partial<Config> = {}): Config {
  const config = { ...readEnv(env), ...overrides };
  const databaseUrl = str(env, 'DATABASE_URL');
  // PGlite, or ':memory:' from the environment, lives in one process (tests override ':memory:' on purpose)
  const oneProcessOnly = config.databaseUrl === undefined || (databaseUrl === ':memory:' && config.databaseUrl === ':memory:');
  if (oneProcessOnly && config.role !== 'all') {
    throw new ConfigError(`ROLE=${config.role} needs DATABASE_URL (the embedded database serves one process)`);
  }
  if (oneProcessOnly && config.webConcurrency > 1) {
    throw new ConfigError('WEB_CONCURRENCY > 1 needs DATABASE_URL (the embedded database serves one process)');
  }
  return Object.freeze(config);
}

/** loadConfig for a process's entry point: a wrong value ends the process with one line naming it. */
export function loadConfigOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(`configuration error: ${err.message}`);
    process.exit(1);
  }
}
