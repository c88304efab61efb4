import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

/**
 * Private PostgreSQL and Redis instances for the reliability scenarios. Each lives in its own temp
 * directory on a free loopback port and is the only thing these scenarios ever stop, kill or
 * restart: the machine's shared servers (5432, 6379) are never touched.
 */

/** A free TCP port on 127.0.0.1 (bound, read, released). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `check` until it returns a value (not undefined) or `timeoutMs` passes. */
export async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs: number, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const why = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
    }
    await sleep(intervalMs);
  }
}

function pgBinDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = fs
    .readdirSync(root)
    .filter((v) => fs.existsSync(path.join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  if (versions.length === 0) throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql');
  return path.join(root, versions[0], 'bin');
}

/** initdb refuses root: run the server binaries as the postgres system user then. */
function asPostgres(bin: string, args: string[]): { cmd: string; args: string[] } {
  if (process.getuid?.() === 0) return { cmd: 'runuser', args: ['-u', 'postgres', '--', bin, ...args] };
  return { cmd: bin, args };
}

function run(bin: string, args: string[], timeoutMs = 60000): void {
  const c = asPostgres(bin, args);
  const res = spawnSync(c.cmd, c.args, { encoding: 'utf8', timeout: timeoutMs });
  if (res.status !== 0) {
    throw new Error(`${path.basename(bin)} ${args.join(' ')} failed (${res.status ?? res.signal}): ${res.stderr || res.stdout}`);
  }
}

const cleanups = new Set<() => void>();
let exitHookInstalled = false;
/** Last resort: whatever is still running when the test process exits is stopped (synchronously). */
export function onExit(fn: () => void): () => void {
  cleanups.add(fn);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const c of cleanups) {
        try {
          c();
        } catch {
          // best effort at exit
        }
      }
    });
  }
  return () => cleanups.delete(fn);
}

export class PrivatePostgres {
  readonly port: number;
  readonly dir: string;
  private readonly bin = pgBinDir();
  private readonly forget: () => void;

  private constructor(port: number, dir: string) {
    this.port = port;
    this.dir = dir;
    this.forget = onExit(() => this.stopSync('immediate'));
  }

  /** initdb in a new temp directory and start the server on a free loopback port. */
  static async start(): Promise<PrivatePostgres> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oas-rel-pg-'));
    if (process.getuid?.() === 0) spawnSync('chown', ['postgres', dir]);
    const port = await freePort();
    const instance = new PrivatePostgres(port, dir);
    run(path.join(instance.bin, 'initdb'), ['-D', instance.dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    await instance.startServer();
    return instance;
  }

  get dataDir(): string {
    return path.join(this.dir, 'data');
  }

  /** A connection string for `database` on this server (the maintenance database by default). */
  url(database = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  async startServer(): Promise<void> {
    const options = [
      `-p ${this.port}`,
      `-k ${this.dir}`,
      '-c listen_addresses=127.0.0.1',
      '-c fsync=off',
      '-c synchronous_commit=off',
      '-c full_page_writes=off',
      '-c max_connections=200',
    ].join(' ');
    run(path.join(this.bin, 'pg_ctl'), ['-D', this.dataDir, '-o', options, '-l', path.join(this.dir, 'server.log'), '-w', '-t', '60', 'start']);
    await until('private PostgreSQL to accept connections', async () => {
      const c = new pg.Client({ connectionString: this.url() });
      await c.connect();
      await c.end();
      return true;
    }, 20000);
  }

  /** pg_ctl stop: 'fast' ends sessions cleanly, 'immediate' is a crash (recovery on next start). */
  async stopServer(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    run(path.join(this.bin, 'pg_ctl'), ['-D', this.dataDir, '-m', mode, '-w', '-t', '60', 'stop']);
  }

  async restart(downMs: number, mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    await this.stopServer(mode);
    await sleep(downMs);
    await this.startServer();
  }

  async createDatabase(name: string): Promise<string> {
    const c = new pg.Client({ connectionString: this.url() });
    await c.connect();
    try {
      await c.query(`CREATE DATABASE ${name}`);
    } finally {
      await c.end();
    }
    return this.url(name);
  }

  private stopSync(mode: 'fast' | 'immediate'): void {
    if (!fs.existsSync(path.join(this.dataDir, 'postmaster.pid'))) return;
    const c = asPostgres(path.join(this.bin, 'pg_ctl'), ['-D', this.dataDir, '-m', mode, '-w', '-t', '30', 'stop']);
    spawnSync(c.cmd, c.args, { timeout: 35000 });
  }

  /** Stops the server and removes its directory. */
  async destroy(): Promise<void> {
    this.stopSync('fast');
    this.forget();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

export class PrivateRedis {
  readonly port: number;
  private child: ChildProcess | undefined;
  private readonly forget: () => void;

  private constructor(port: number) {
    this.port = port;
    this.forget = onExit(() => this.child?.kill('SIGKILL'));
  }

  static async start(): Promise<PrivateRedis> {
    const instance = new PrivateRedis(await freePort());
    await instance.startServer();
    return instance;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  async startServer(): Promise<void> {
    if (this.running) return;
    const child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--loglevel', 'warning'],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    this.child = child;
    await until('private Redis to accept connections', async () => {
      if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
      await new Promise<void>((resolve, reject) => {
        const s = net.connect(this.port, '127.0.0.1');
        s.once('connect', () => {
          s.write('PING\r\n');
        });
        s.once('data', (d) => {
          s.destroy();
          if (d.toString().startsWith('+PONG')) resolve();
          else reject(new Error(d.toString()));
        });
        s.once('error', reject);
      });
      return true;
    }, 10000, 50);
  }

  /** Stops the server (SIGTERM, or SIGKILL for a crash) and waits for it to exit. */
  async stopServer(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    await exited;
  }

  async destroy(): Promise<void> {
    await this.stopServer('SIGKILL');
    this.forget();
  }
}

/** One Redis command over a raw connection (RESP); returns the reply line(s) as text. */
export function redisCommand(port: number, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error('redis command timed out'));
    }, 2000);
    let reply = '';
    s.once('connect', () => s.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`));
    s.on('data', (d) => {
      reply += d.toString();
      // a simple reply, an integer, an error or a bulk string with its payload
      if (/^[+:-].*\r\n$/s.test(reply) || /^\$-1\r\n$/.test(reply) || /^\$\d+\r\n.*\r\n$/s.test(reply)) {
        clearTimeout(timer);
        s.destroy();
        resolve(reply.trim());
      }
    });
    s.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}
