import cluster from 'node:cluster';
import net from 'node:net';
import closeWithGrace from 'close-with-grace';
import { runClusterPrimary } from './cluster.ts';
import { loadConfigOrExit } from './config.ts';
import { DataDirInUse } from './db/data-dir-lock.ts';

function exitWith(line: string): never {
  console.error(line);
  process.exit(1);
}

/** Whether `port` can be listened on now (it is listened on for good once the service is built). */
function portIsFree(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(true)));
  });
}

const config = loadConfigOrExit();

// A busy port is told in one line before anything is opened (forked API processes share the supervisor's)
if (config.role !== 'worker' && !cluster.isWorker && !(await portIsFree(config.port, config.host))) {
  exitWith(`port ${config.port} is already in use (on ${config.host}): stop what listens there, or set PORT`);
}

// WEB_CONCURRENCY > 1: this process only supervises the forked API (and worker) processes; it never returns
if (cluster.isPrimary && config.webConcurrency > 1 && config.role !== 'worker') await runClusterPrimary(config);

// tracing starts before the app loads: its instrumentations patch libraries as they load
const telemetry = config.otelEndpoint ? (await import('./telemetry.ts')).startTelemetry(config) : undefined;
const { buildApp } = await import('./app.ts');
// migrate.ts loads `pg`: after tracing starts, as the app
const { DataFromNewerRelease } = await import('./db/migrate.ts');
const { bootstrapAdmin } = await import('./modules/users/admin-bootstrap.ts');
const { gracefulClose } = await import('./http/server.ts');

const app = await buildApp(config).catch((err: unknown) => {
  // a refusal the operator acts on is one line, not a stack
  if (err instanceof DataDirInUse || err instanceof DataFromNewerRelease) exitWith(err.message);
  throw err;
});
if (config.role !== 'worker') await bootstrapAdmin(app.ctx);
// tracing says whether it is on and where spans go, and from now on when they fail to get there
const { tracingStatus, tracingStatusLine } = await import('./telemetry-status.ts');
const tracing = tracingStatus(config);
app.log.info({ tracing }, tracingStatusLine(tracing));
telemetry?.reportTo(app.log);

const close = gracefulClose(app);
closeWithGrace({ delay: 30000 }, async ({ signal, err }) => {
  if (err) app.log.error({ err }, 'shutting down after an error');
  else app.log.info({ signal }, 'shutting down');
  await close();
  await telemetry?.shutdown();
});

await app.ready();
if (config.role === 'worker') {
  if (config.metricsPort !== undefined) await app.listen({ port: config.metricsPort, host: config.host });
  app.log.info(config.metricsPort === undefined ? 'worker started (ROLE=worker): processing jobs, not serving HTTP' : `worker started (ROLE=worker): processing jobs; /health, /ready and /metrics on port ${config.metricsPort}`);
  if (!process.stdout.isTTY) process.stdout.write('Worker started: processing jobs\n');
} else {
  await app.listen({ port: config.port, host: config.host });
  const base = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${config.port}`;
  app.log.info(`API at ${base}/api/v1 — interactive docs at ${base}/docs (OpenAPI: ${base}/openapi.json) — console at ${base}/console`);
  if (!process.stdout.isTTY) process.stdout.write(`Docs: ${base}/docs\n`);
}
