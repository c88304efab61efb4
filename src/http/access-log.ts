import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import pino from 'pino';

/**
 * The access log: one line per request at `info` when it completes ("request completed", with
 * the request's method, URL, host and client, its status and its time), and "incoming request" at
 * `debug` when it arrives. Fastify's default writes both at `info`, and these two lines were most of
 * what logging cost (bench finding 22).
 *
 * They are written by a logger without redaction: they hold only the fields picked here (no headers,
 * no body), so the service logger's redaction, whose wildcard paths walk every object a line holds,
 * had nothing to find in them. Every other line (an errored request, the error handler's, the
 * application's own) still goes through the redacting logger.
 */
export class AccessLogController extends LogController {
  private readonly access: pino.Logger;

  /** `level` and `destination` as the service logger's, so the lines interleave with its own */
  constructor(level: string, destination: pino.DestinationStream) {
    super();
    this.access = pino({ level }, destination);
  }

  override incomingRequest(request: FastifyRequest): void {
    if (!this.access.isLevelEnabled('debug')) return;
    this.access.debug({ reqId: request.id, req: requestFields(request) }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) {
      super.requestCompleted(error, request, reply);
      return;
    }
    if (!this.access.isLevelEnabled('info')) return;
    this.access.info(
      { reqId: request.id, req: requestFields(request), res: { statusCode: reply.statusCode }, responseTime: reply.elapsedTime },
      'request completed',
    );
  }
}

/** The fields of Fastify's own request serializer. */
function requestFields(request: FastifyRequest) {
  return {
    method: request.method,
    url: request.url,
    version: request.headers['accept-version'],
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket.remotePort,
  };
}
