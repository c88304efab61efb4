import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';

/** The access log: "request completed" at `info`, "incoming request" at `debug`, only the fields picked here (no costly redaction). */
export class AccessLogController extends LogController {
  private readonly access: Logger | undefined;

  /** without `access` (a terminal's pretty log) the lines go through the request's logger */
  constructor(access?: Logger) {
    super();
    this.access = access;
  }

  override incomingRequest(request: FastifyRequest): void {
    this.write(request, 'debug', { req: requestFields(request) }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) {
      super.requestCompleted(error, request, reply);
      return;
    }
    const line = { req: requestFields(request), res: { statusCode: reply.statusCode }, responseTime: reply.elapsedTime };
    this.write(request, 'info', line, 'request completed');
  }

  private write(request: FastifyRequest, level: 'debug' | 'info', fields: object, msg: string): void {
    if (this.access === undefined) {
      request.log[level](fields, msg);
    } else if (this.access.isLevelEnabled(level)) {
      this.access[level]({ reqId: request.id, ...fields }, msg);
    }
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
