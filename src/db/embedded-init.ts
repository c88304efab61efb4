import fs from 'node:fs/promises';
import path from 'node:path';
import { Worker } from 'node:worker_threads';

/**
 * Creates the embedded database's data directory `dir` when it does not exist yet, in a worker
 * thread and under a temporary name renamed into place once complete.
 *
 * initdb runs in WebAssembly memory of its own, several hundred MiB that the process would keep
 * until a full collection happened to come; a worker thread's memory goes with the thread. And a
 * process killed during initdb leaves only the temporary directory, which the next start removes:
 * `dir` is either absent or a whole cluster.
 */
export async function createEmbeddedDataDir(dir: string, startParams: readonly string[]): Promise<void> {
  if (await exists(path.join(dir, 'PG_VERSION'))) return;
  const temp = `${dir}.creating`;
  await fs.rm(temp, { recursive: true, force: true });
  await fs.mkdir(path.dirname(dir), { recursive: true });
  const worker = new Worker(new URL('./embedded-init-worker.ts', import.meta.url), { workerData: { dir: temp, startParams } });
  await new Promise<void>((resolve, reject) => {
    worker.once('error', reject);
    worker.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`creating the embedded database in ${dir} stopped (exit code ${code})`))));
  });
  // an empty directory an earlier release created before its initdb (nothing in it was ever acknowledged)
  await fs.rm(dir, { recursive: true, force: true });
  await fs.rename(temp, dir);
}

async function exists(file: string): Promise<boolean> {
  return fs.access(file).then(
    () => true,
    () => false,
  );
}
