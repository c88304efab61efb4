import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';

/** What a process that holds a data directory says of itself. */
export interface DataDirHolder {
  pid: number;
  startedAt: string;
}

/** Thrown when another live process holds the data directory. */
export class DataDirInUse extends Error {
  readonly dataDir: string;
  readonly holder: DataDirHolder | undefined;

  constructor(dataDir: string, holder: DataDirHolder | undefined) {
    const who = holder ? `process ${holder.pid} (running since ${holder.startedAt})` : 'another process';
    super(`DATA_DIR ${dataDir} is in use by ${who}: stop it first, or give this one another DATA_DIR`);
    this.dataDir = dataDir;
    this.holder = holder;
  }
}

export interface DataDirLock {
  release(): Promise<void>;
}

/**
 * Where the lock of a data directory listens. On Linux an abstract socket and on Windows a named
 * pipe: the system releases either when its process ends, however it ends, so a crash never leaves
 * a stale lock behind. Elsewhere a socket file in the directory, which a crash leaves behind: a
 * socket file nobody answers on is stale and is replaced.
 */
function lockAddress(realDir: string): { address: string; file: boolean } {
  const key = crypto.createHash('sha256').update(realDir).digest('hex').slice(0, 24);
  if (process.platform === 'linux') return { address: `\0order-account-service-${key}`, file: false };
  if (process.platform === 'win32') return { address: `\\\\?\\pipe\\order-account-service-${key}`, file: false };
  return { address: path.join(realDir, '.lock.sock'), file: true };
}

function listen(server: net.Server, address: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(address, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** What the process holding the lock says of itself, or undefined when nobody answers. */
function askHolder(address: string): Promise<DataDirHolder | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect(address);
    let text = '';
    const done = (holder: DataDirHolder | undefined) => {
      socket.destroy();
      resolve(holder);
    };
    socket.setTimeout(2000, () => done(undefined));
    socket.on('data', (chunk) => (text += chunk.toString('utf8')));
    socket.on('end', () => {
      try {
        done(JSON.parse(text) as DataDirHolder);
      } catch {
        done(undefined);
      }
    });
    socket.on('error', () => done(undefined));
  });
}

/**
 * Takes the data directory `dataDir` for this process alone, before anything in it is opened: two
 * processes on one embedded database would each see only their own writes, and one of them would
 * lose its writes at the next start. Throws `DataDirInUse`, naming the holder, when another live
 * process has it. The lock lasts until `release` or the end of the process.
 */
export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  await fs.mkdir(dataDir, { recursive: true });
  const realDir = await fs.realpath(dataDir);
  const { address, file } = lockAddress(realDir);
  const me: DataDirHolder = { pid: process.pid, startedAt: new Date(Date.now() - process.uptime() * 1000).toISOString() };
  const server = net.createServer((socket) => socket.end(JSON.stringify(me)));
  for (let attempt = 0; ; attempt++) {
    try {
      await listen(server, address);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
      const holder = await askHolder(address);
      if (holder !== undefined || !file || attempt > 0) throw new DataDirInUse(dataDir, holder);
      // a socket file left by a process that ended without removing it
      await fs.rm(address, { force: true });
    }
  }
  // the lock never keeps the process alive by itself
  server.unref();
  return {
    release: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
