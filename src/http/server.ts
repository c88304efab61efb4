import crypto from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { setImmediate as nextCheckPhase, setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import type { Config } from '../config.ts';
import { clientErrorHandler, frameworkErrors } from './errors.ts';
import { loggerOptions } from './logger.ts';
import { serverLimits } from './security.ts';
import { lazySchemaController } from './validation.ts';

/** Fastify's options for the service: logging, resource limits, proxies, routing, request ids. */
export function serverOptions(config: Config, logStream: { write(msg: string): void } | undefined): FastifyServerOptions {
  return {
    ...loggerOptions(config, logStream),
    ...serverLimits(config),
    // TRUST_PROXY=true trusts the immediate peer only: the client IP is the X-Forwarded-For entry
    // the balancer appended, never one a client wrote into the header itself (Fastify's own `true`
    // trusts every hop, so the left-most entry, which the client controls, would be the key)
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
 * Shutting down, server.close() waits for every connection to end, but closes only the ones idle at
 * that moment. A connection still serving a request then stays open as an idle keep-alive socket
 * for as long as the client likes (undici honours our 72 s keep-alive hint), past the grace period.
 * So until the server has closed, connections are closed as soon as they fall idle.
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

/** How long a process asked to stop keeps serving, every answer with `Connection: close`, before it stops accepting. */
export const SHUTDOWN_DRAIN_MS = 1000;

/**
 * The close a stop signal asks for, kind to keep-alive clients. Closing a connection the moment it
 * is idle races with a client that is writing its next request on it: the request is dropped
 * (ECONNRESET). So first, for SHUTDOWN_DRAIN_MS, every answer — those of requests in flight and of
 * requests arriving, on open or new connections — carries `Connection: close`, and a client that
 * is using its connection learns that it ends instead of finding it gone. Then app.close(): no new
 * connections, in-flight requests finish, the connections still idle are closed (the sweep above).
 * Returns that close; call it once.
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
      // timers run before the poll phase: after a stalled loop, the requests that arrived meanwhile
      // are read (and their connections busy) before the idle ones are closed
      await nextCheckPhase();
    }
    await app.close();
  };
}
