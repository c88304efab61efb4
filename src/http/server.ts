import crypto from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { setImmediate as nextCheckPhase, setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import pino from 'pino';
import type { Config } from '../config.ts';
import { AccessLogController } from './access-log.ts';
import { clientErrorHandler, frameworkErrors } from './error-handling.ts';
import { serverLimits } from './security.ts';
import { lazySchemaController } from './validation.ts';

/** Fastify's options for the service: logging, resource limits, proxies, routing, request ids. */
export function serverOptions(config: Config, logStream: { write(msg: string): void } | undefined): FastifyServerOptions {
  return {
    ...loggerOptions(config, logStream),
    ...serverLimits(config),
    // TRUST_PROXY=true: the immediate peer only (Fastify's `true` would take the client-set left-most X-Forwarded-For)
    trustProxy: config.trustProxy === true ? (_address: string, hop: number) => hop === 0 : config.trustProxy,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    frameworkErrors,
    schemaController: lazySchemaController,
    clientErrorHandler,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,64}$/.test(given) ? given : crypto.randomUUID();
    },
  };
}

/**
 * stdout, made once per process: lines written synchronously (a crash loses none); access lines gathered into writes
 * of at most 4 KiB (a pipe takes that whole, splitting no line), flushed within 100 ms and at exit.
 */
let stdout: { lines: pino.DestinationStream; access: pino.DestinationStream } | undefined;
function stdoutLogs(): NonNullable<typeof stdout> {
  if (stdout === undefined) {
    const lines = pino.destination({ dest: 1, sync: true });
    const access = pino.destination({ dest: 1, sync: true, minLength: 3072, maxWrite: 4096, periodicFlush: 100 });
    process.on('exit', () => access.flushSync());
    stdout = { lines, access };
  }
  return stdout;
}

/** The service logger's options and its access-line controller; `stream` replaces stdout (tests). */
function loggerOptions(config: Config, stream: { write(msg: string): void } | undefined): Pick<FastifyServerOptions, 'logger' | 'logController'> {
  const logger = {
    level: config.logLevel,
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
  const out = stream ? { lines: stream, access: stream } : stdoutLogs();
  return { logger: { ...logger, stream: out.lines }, logController: new AccessLogController(pino({ level: config.logLevel }, out.access)) };
}

/** server.close() closes only the connections idle at that moment, so until it is done idle ones are closed. */
export function closeIdleConnectionsOnShutdown(app: FastifyInstance): void {
  let idleSweep: NodeJS.Timeout | undefined;
  app.addHook('preClose', async () => {
    idleSweep = setInterval(() => app.server.closeIdleConnections(), 100);
    idleSweep.unref();
  });
  app.addHook('onClose', async () => {
    clearInterval(idleSweep);
  });
}

const SHUTDOWN_DRAIN_MS = 1000;

/** Apps shutting down (gracefulClose): each answer they send from then on carries `Connection: close`. */
const draining = new WeakSet<FastifyInstance>();

/** Before the routes: the header is set as each answer is sent, so one in flight when draining began has it too (decision 152). */
export function closeConnectionsWhileDraining(app: FastifyInstance): void {
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (draining.has(app)) reply.header('connection', 'close');
    done(null, payload);
  });
}

/**
 * The close for a stop signal, kind to keep-alive clients (closing an idle connection races with their next request):
 * every answer carries `Connection: close` for SHUTDOWN_DRAIN_MS, then app.close(). Call the returned close once.
 */
export function gracefulClose(app: FastifyInstance): () => Promise<void> {
  // prepended: it runs before Fastify's handler, so an answer Fastify does not send (a hijacked stream) carries it too
  app.server.prependListener('request', (_req, res: ServerResponse) => {
    if (draining.has(app)) res.setHeader('connection', 'close');
  });
  return async () => {
    if (app.server.listening) {
      draining.add(app);
      await sleep(SHUTDOWN_DRAIN_MS);
      // after a stalled loop, the requests that arrived meanwhile are read before idle connections close
      await nextCheckPhase();
    }
    await app.close();
  };
}
