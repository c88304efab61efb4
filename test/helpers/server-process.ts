import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import net from 'node:net';
import type { TestContext } from 'node:test';
import { request } from 'undici';
import { defer, testConfig, waitFor } from './app.ts';

/** Server processes started by tests (src/server.ts, the migrate CLI), as an operator runs them. */
export const NODE = 'node_modules/.bin/node';
export const ADMIN_EMAIL = 'ops-admin@example.com';
export const ADMIN_PASSWORD = 'ops-admin-password-123';

/** A port nobody listens on right now (the kernel picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export interface Proc {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** What the process writes to stderr when it loads the OpenTelemetry SDK (see SDK_LOAD_PROBE). */
export const SDK_LOADED = 'probe: @opentelemetry/sdk-node loaded';

/**
 * Node options for `start` that make the process report (SDK_LOADED, on stderr) whether it ever
 * resolves the OpenTelemetry SDK: a module resolution hook, registered before the entry point runs.
 */
export const SDK_LOAD_PROBE = [
  `--import=data:text/javascript,${encodeURIComponent(
    `import { registerHooks } from 'node:module';
    registerHooks({ resolve(specifier, context, next) {
      if (specifier === '@opentelemetry/sdk-node') process.stderr.write(${JSON.stringify(`${SDK_LOADED}
`)});
      return next(specifier, context);
    } });`,
  )}`,
];

/** Runs `command` with `env` alone, collecting its output; at the test's end it is killed, if still running, and awaited. */
export function spawnProcess(t: TestContext, command: string, args: string[], env: Record<string, string>): Proc {
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  // through defer: it runs before the removal of a data directory registered earlier, and that waits until the process is gone
  defer(t, async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGKILL');
    await exited;
  });
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** `script` on the project's Node.js, with PATH and `env`. */
export function start(t: TestContext, script: string, env: Record<string, string>, nodeOptions: string[] = []): Proc {
  // --liftoff-only: as in `npm test`, the embedded database's WebAssembly is not recompiled by the
  // optimising tier, which costs a short-lived process more CPU than it saves
  return spawnProcess(t, NODE, ['--liftoff-only', ...nodeOptions, script], { PATH: process.env.PATH ?? '', ...env });
}

/**
 * Environment of a fresh server: its own data directory and (with TEST_DATABASE_URL) its own
 * database, a copy of the migrated template unless `emptyDatabase` asks for one nothing has touched.
 */
export async function serverEnv(
  t: TestContext,
  extra: Record<string, string> = {},
  opts: { emptyDatabase?: boolean } = {},
): Promise<Record<string, string>> {
  const config = await testConfig(t, {}, opts);
  const env: Record<string, string> = {
    DATA_DIR: config.dataDir,
    HOST: '127.0.0.1',
    BCRYPT_ROUNDS: '12',
    LOG_LEVEL: 'warn',
    ADMIN_EMAIL,
    ADMIN_PASSWORD,
    SEED_DEMO_CATALOG: 'false',
    EMBEDDED_SHARED_BUFFERS_MB: String(config.embeddedSharedBuffersMb),
    ...extra,
  };
  if (config.databaseUrl && config.databaseUrl !== ':memory:') env.DATABASE_URL = config.databaseUrl;
  return env;
}

/** Waits for /health; generous, as start-up (migrations, the embedded database) is slow on a busy machine. */
export async function untilHealthy(base: string, proc: Proc): Promise<void> {
  await waitFor(async () => {
    if (proc.child.exitCode !== null) throw new Error(`server exited: ${proc.stderr()}${proc.stdout()}`);
    try {
      const res = await request(`${base}/health`);
      await res.body.dump();
      return res.statusCode === 200 ? true : undefined;
    } catch {
      return undefined;
    }
  }, 90000, 100);
}

/** Whether a process of that pid exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The parent of process `pid` (Linux: /proc/<pid>/stat). */
export async function parentOf(pid: number): Promise<number> {
  const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** The processes whose parent is `pid`. */
export async function childrenOf(pid: number): Promise<number[]> {
  const out: number[] = [];
  for (const entry of (await fs.readdir('/proc')).filter((d) => /^\d+$/.test(d))) {
    if ((await parentOf(Number(entry)).catch(() => undefined)) === pid) out.push(Number(entry));
  }
  return out.sort((a, b) => a - b);
}
