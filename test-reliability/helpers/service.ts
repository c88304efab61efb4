import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, onExit, until } from './infra.ts';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const SERVER = path.join(ROOT, 'src', 'server.ts');

export const ADMIN_EMAIL = 'reliability-admin@example.com';
export const ADMIN_PASSWORD = 'reliability-admin-password';
export const SHOPIFY_SECRET = 'reliability-shopify-secret';

/** One ES256 key for every process of a deployment (tokens issued by one API verify on the other). */
export function jwtPrivateKey(): string {
  const { privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
}

export interface ServiceOptions {
  role: 'api' | 'worker' | 'all';
  /** PostgreSQL; absent: the embedded database in `dataDir` */
  databaseUrl?: string;
  /** the process's DATA_DIR, kept by its owner (default: a temp directory of its own, removed with it) */
  dataDir?: string;
  redisUrl?: string;
  jwtKey: string;
  /** extra environment (RATE_LIMIT_*, WEBHOOK_RETRY_SCHEDULE, …) */
  env?: Record<string, string>;
  name?: string;
}

let counter = 0;
const START_MARK = '\n--- process started ---\n';

/**
 * One service process (`node src/server.ts`) started by a scenario. Its output is kept (JSON log
 * lines) so a scenario can count log messages and show them when something fails.
 */
export class ServiceProcess {
  readonly name: string;
  readonly role: ServiceOptions['role'];
  readonly port: number;
  readonly output: string[] = [];
  private child: ChildProcess | undefined;
  private readonly options: ServiceOptions;
  readonly dataDir: string;
  private readonly ownsDataDir: boolean;
  exitCode: number | null = null;
  exitSignal: NodeJS.Signals | null = null;
  private exitedPromise: Promise<void> = Promise.resolve();
  private readonly forget: () => void;

  private constructor(options: ServiceOptions, port: number) {
    this.options = options;
    this.role = options.role;
    this.port = port;
    this.name = options.name ?? `${options.role}-${++counter}`;
    this.ownsDataDir = options.dataDir === undefined;
    this.dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'oas-rel-svc-'));
    this.forget = onExit(() => {
      if (this.running) this.child?.kill('SIGKILL');
    });
  }

  static async start(options: ServiceOptions): Promise<ServiceProcess> {
    const svc = await ServiceProcess.launch(options);
    // one that never became ready is not left running, nor its data directory behind
    await svc.waitReady().catch(async (err: unknown) => {
      await svc.destroy();
      throw err;
    });
    return svc;
  }

  /** Spawns the process without waiting for it to be ready (it may be meant to fail, or to be killed while starting). */
  static async launch(options: ServiceOptions): Promise<ServiceProcess> {
    const svc = new ServiceProcess(options, await freePort());
    svc.spawn();
    return svc;
  }

  /** Resolves when the process has exited, with how. */
  async exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    await this.exitedPromise;
    return { code: this.exitCode, signal: this.exitSignal };
  }

  /** The output of the latest start only. */
  get currentOutput(): string {
    const text = this.output.join('');
    return text.slice(text.lastIndexOf(START_MARK) + START_MARK.length);
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined && this.exitCode === null && this.exitSignal === null;
  }

  /** Log lines (parsed JSON) whose msg contains `text`. */
  logLines(text: string): Record<string, unknown>[] {
    const found: Record<string, unknown>[] = [];
    for (const line of this.output.join('').split('\n')) {
      if (!line.includes(text)) continue;
      try {
        found.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        found.push({ msg: line });
      }
    }
    return found;
  }

  tail(lines = 30): string {
    return this.output.join('').split('\n').slice(-lines).join('\n');
  }

  private spawn(): void {
    const o = this.options;
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? os.tmpdir(),
      NODE_ENV: 'production',
      ROLE: o.role,
      HOST: '127.0.0.1',
      PORT: String(this.port),
      DATA_DIR: this.dataDir,
      ...(o.databaseUrl ? { DATABASE_URL: o.databaseUrl } : {}),
      JWT_PRIVATE_KEY: o.jwtKey,
      // workers log at info so that their "worker started" line tells when they are up
      LOG_LEVEL: o.role === 'worker' ? 'info' : 'warn',
      BCRYPT_ROUNDS: '4',
      ADMIN_EMAIL,
      ADMIN_PASSWORD,
      SHOPIFY_WEBHOOK_SECRET: SHOPIFY_SECRET,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      SEED_DEMO_CATALOG: 'false',
      ...(o.redisUrl ? { REDIS_URL: o.redisUrl } : {}),
      ...o.env,
    };
    this.output.push(START_MARK);
    const child = spawn(process.execPath, [SERVER], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    this.exitCode = null;
    this.exitSignal = null;
    const keep = (chunk: Buffer) => {
      this.output.push(chunk.toString('utf8'));
      if (this.output.length > 20000) this.output.splice(0, 5000);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    this.exitedPromise = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitCode = code;
        this.exitSignal = signal;
        resolve();
      });
    });
  }

  async waitReady(timeoutMs = 120000): Promise<void> {
    await until(`${this.name} to start`, async () => {
      if (!this.running) throw new Error(`${this.name} exited (${this.exitCode ?? this.exitSignal}):\n${this.tail()}`);
      if (this.role === 'worker') {
        const text = this.output.join('');
        return text.slice(text.lastIndexOf(START_MARK)).includes('worker started') ? true : undefined;
      }
      const res = await fetch(`${this.baseUrl}/health`, { signal: AbortSignal.timeout(1000) });
      return res.ok ? true : undefined;
    }, timeoutMs, 100).catch((err: Error) => {
      throw new Error(`${err.message}\n--- ${this.name} output ---\n${this.tail()}`);
    });
  }

  /** Sends a signal; resolves when the process has exited (or after `timeoutMs`, with SIGKILL then). */
  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 40000): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }> {
    const started = Date.now();
    if (this.running) {
      this.child?.kill(signal);
      const timer = setTimeout(() => this.child?.kill('SIGKILL'), timeoutMs);
      await this.exitedPromise;
      clearTimeout(timer);
    }
    return { code: this.exitCode, signal: this.exitSignal, ms: Date.now() - started };
  }

  /** SIGKILL (no shutdown at all), waiting for the exit. */
  kill(): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }> {
    return this.stop('SIGKILL');
  }

  /** Starts the same process again (same port, same data directory). */
  async restart(): Promise<void> {
    if (this.running) await this.stop();
    this.spawn();
    await this.waitReady();
  }

  async destroy(): Promise<void> {
    await this.stop('SIGKILL', 5000);
    this.forget();
    if (this.ownsDataDir) fs.rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/** Starts several processes at once (they migrate the same database concurrently). */
export async function startAll(options: ServiceOptions[]): Promise<ServiceProcess[]> {
  const settled = await Promise.allSettled(options.map((o) => ServiceProcess.start(o)));
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    await Promise.all(settled.map((s) => (s.status === 'fulfilled' ? s.value.destroy() : undefined)));
    throw failed.reason;
  }
  return settled.map((s) => (s as PromiseFulfilledResult<ServiceProcess>).value);
}

/** Kills every process still running (an after() hook of each scenario). */
export async function destroyAll(processes: Iterable<ServiceProcess>): Promise<void> {
  await Promise.all([...processes].map((p) => p.destroy()));
}
