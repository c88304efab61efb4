import type { FastifyServerOptions } from 'fastify';
import pino from 'pino';
import type { Config } from '../config.ts';
import { AccessLogController } from './access-log.ts';
import { TurnBufferedDestination } from './log-destination.ts';

let stdoutDestination: TurnBufferedDestination | undefined;

/**
 * The process's log destination when stdout is not a terminal: the lines of one event-loop turn are
 * written to stdout together by the main thread at the end of the turn (TurnBufferedDestination).
 * An asynchronous destination hands each line to libuv's thread pool, and at rest (a request every
 * few milliseconds) that costs a wake-up of a pool thread and another of the main thread per line:
 * 0.3 ms of CPU per request at 50 requests/s, with no gain in throughput at saturation
 * (bench/README.md, finding 61). One per process: every app built in it shares it.
 */
function stdoutLog(): TurnBufferedDestination {
  stdoutDestination ??= new TurnBufferedDestination(1);
  return stdoutDestination;
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
  return { logger: { ...logger, stream: destination }, logController: new AccessLogController(pino({ level: config.logLevel }, destination)) };
}
