import type { FastifyServerOptions } from 'fastify';
import pino from 'pino';
import type { Config } from '../config.ts';
import { AccessLogController } from './access-log.ts';

/**
 * stdout when it is not a terminal: pino's own destination, writing each line synchronously as it
 * is logged (pino's default). No line waits in a buffer, so a crash or a kill loses none, and no
 * thread-pool hand-off is paid per line. One per process: every app built in it shares it.
 */
let stdoutDestination: pino.DestinationStream | undefined;
function stdoutLog(): pino.DestinationStream {
  stdoutDestination ??= pino.destination({ dest: 1, sync: true });
  return stdoutDestination;
}

/**
 * stdout for the access lines, one per request: pino's own destination gathering them until about
 * 3 KiB wait, then one write of at most 4 KiB (a pipe takes it whole, so it never splits a line of
 * the other destination), within 100 ms when the process is quiet, and at exit. A busy process
 * pays one write for a dozen requests rather than one each; only a kill (SIGKILL) loses what waits.
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

/**
 * The service logger's options, and the controller that writes its per-request lines.
 * @param stream where the JSON lines go instead of stdout (tests that read the log)
 */
export function loggerOptions(
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
  return { logger: { ...logger, stream: destination }, logController: new AccessLogController(pino({ level: config.logLevel }, stream ?? accessLog())) };
}
