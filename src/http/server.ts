import crypto from 'node:crypto';
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
