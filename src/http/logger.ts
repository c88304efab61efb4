import type { FastifyServerOptions } from 'fastify';
import pino from 'pino';
import type { Config } from '../config.ts';
import { AccessLogController } from './access-log.ts';

/** stdout, each line written synchronously so a crash loses none; one per process. */
let stdoutDestination: pino.DestinationStream | undefined;
function stdoutLog(): pino.DestinationStream {
  stdoutDestination ??= pino.destination({ dest: 1, sync: true });
  return stdoutDestination;
}

/**
 * stdout for the access lines, gathered into writes of at most 4 KiB (a pipe takes that whole, so no
 * other line is split), flushed within 100 ms and at exit; only SIGKILL loses what waits.
 */
let accessDestination: pino.DestinationStream | undefined;
function accessLog(): pino.DestinationStream {
  if (accessDestination === undefined) {
    const destination = pino.destination({ dest: 1, sync: true, minLength: 3072, maxWrite: 4096, periodicFlush: 100 });
    process.on('exit', () => destination.flushSync());
    accessDestination = destination;
  }
  return accessDestination;
}

/** The service logger's options and its access-line controller; `stream` replaces stdout (tests). */
export function loggerOptions(
  config: Config,
  stream: { write(msg: string): void } | undefined,
): Pick<FastifyServerOptions, 'logger' | 'logController'> {
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
  const destination = stream ?? stdoutLog();
  return { logger: { ...logger, stream: destination }, logController: new AccessLogController(pino({ level: config.logLevel }, stream ?? accessLog())) };
}
