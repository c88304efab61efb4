import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

// Node.js has no file lock of its own. fs-native-extensions takes an OS lock tied to the open file
// (F_OFD_SETLK, flock, LockFileEx): it is dropped when the file closes or its process ends, however.
const { tryLock } = createRequire(import.meta.url)('fs-native-extensions') as {
  /** true when the exclusive lock was taken, false when another open file holds it */
  tryLock(fd: number): boolean;
};

export const LOCK_FILE = '.lock';

interface DataDirHolder {
  pid: number;
  startedAt: string;
}

/** Thrown when another live process holds the data directory. */
export class DataDirInUse extends Error {
  readonly holder: DataDirHolder | undefined;

  constructor(dataDir: string, holder: DataDirHolder | undefined) {
    const who = holder ? `process ${holder.pid} (running since ${holder.startedAt})` : 'another process';
    super(`DATA_DIR ${dataDir} is in use by ${who}: stop it first, or give this one another DATA_DIR`);
    this.holder = holder;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it lives, under another user
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** What the holder wrote into the lock file right after taking the lock, or undefined when it names no live process. */
function readHolder(fd: number): DataDirHolder | undefined {
  try {
    const buffer = Buffer.alloc(512);
    const text = buffer.subarray(0, fs.readSync(fd, buffer, 0, buffer.length, 0)).toString('utf8');
    const holder = JSON.parse(text) as Partial<DataDirHolder>;
    if (!Number.isSafeInteger(holder.pid) || typeof holder.startedAt !== 'string') return undefined;
    return alive(holder.pid!) ? { pid: holder.pid!, startedAt: holder.startedAt } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Takes `dataDir` for this process alone (two processes on one embedded database would each see only
 * their own writes); the OS lock goes with its process, so a crash leaves none stale. Throws `DataDirInUse`.
 */
export async function lockDataDir(dataDir: string): Promise<{ release(): Promise<void> }> {
  await fs.promises.mkdir(dataDir, { recursive: true });
  const file = path.join(dataDir, LOCK_FILE);
  // O_NOFOLLOW: a symbolic link planted as the lock file is refused (ELOOP), not followed
  const fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_NOFOLLOW, 0o600);
  try {
    if (!tryLock(fd)) throw new DataDirInUse(dataDir, readHolder(fd));
  } catch (err) {
    fs.closeSync(fd);
    throw err;
  }
  const me: DataDirHolder = { pid: process.pid, startedAt: new Date(Date.now() - process.uptime() * 1000).toISOString() };
  fs.ftruncateSync(fd);
  fs.writeSync(fd, JSON.stringify(me), 0);
  let released = false;
  return {
    // closing the file drops the lock
    release: async () => {
      if (released) return;
      released = true;
      fs.ftruncateSync(fd);
      fs.closeSync(fd);
    },
  };
}
