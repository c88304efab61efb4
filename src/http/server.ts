import crypto from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { setImmediate as nextCheckPhase, setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import type { Config } from '../config.ts';
import { clientErrorHandler, frameworkErrors } from './error-handling.ts';
import { loggerOptions } from './logger.ts';
import { serverLimits } from './security.ts';
import { lazySchemaController } from './validation.ts';

/** Fastify's options for the service: logging, resource limits, proxies, routing, request ids. */
export function serverOptions(config: Config, logStream: { write(msg: string): void } | undefined): FastifyServerOptions {
  return {
    ...loggerOptions(config, logStream),
    ...serverLimits(config),
    // TRUST_PROXY=true trusts the immediate peer only (Fastify's `true` trusts every hop, so the
    // left-most X-Forwarded-For entry, which the client controls, would be the IP)
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
 * server.close() closes only the connections idle at that moment; one serving a request would then
 * stay open as an idle keep-alive socket. So until the server has closed, idle ones are closed.
 */
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

/**
 * The close a stop signal asks for, kind to keep-alive clients: closing an idle connection races with
 * a client writing its next request on it. So for SHUTDOWN_DRAIN_MS every answer carries
 * `Connection: close`, then app.close(). Returns that close; call it once.
 */
export function gracefulClose(app: FastifyInstance): () => Promise<void> {
  const inFlight = new Set<ServerResponse>();
  let draining = false;
  // prepended: it runs before Fastify's handler, so even an answer sent at once carries the header
  app.server.prependListener('request', (_req, res: ServerResponse) => {
    if (draining) {
      res.setHeader('connection', 'close');
      return;
    }
    inFlight.add(res);
    res.once('close', () => inFlight.delete(res));
  });
  return async () => {
    if (app.server.listening) {
      draining = true;
      for (const res of inFlight) if (!res.headersSent) res.setHeader('connection', 'close');
      inFlight.clear();
      await sleep(SHUTDOWN_DRAIN_MS);
      // after a stalled loop, the requests that arrived meanwhile are read before idle connections close
      await nextCheckPhase();
    }
    await app.close();
  };
}
