import { fork } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';

/**
 * Creates the embedded data directory `dir` if absent, in a child process (initdb's WebAssembly memory goes back when it
 * exits), under a temporary name renamed into place once complete: `dir` is absent or whole, and a killed start's child cannot write into it.
 */
export async function createEmbeddedDataDir(dir: string, startParams: readonly string[]): Promise<void> {
  if (await fs.access(path.join(dir, 'PG_VERSION')).then(() => true, () => false)) return;
  const parent = path.dirname(dir);
  const prefix = `${path.basename(dir)}.creating`;
  await fs.mkdir(parent, { recursive: true });
  for (const left of await fs.readdir(parent)) {
    if (left.startsWith(prefix)) await fs.rm(path.join(parent, left), { recursive: true, force: true });
  }
  const temp = path.join(parent, `${prefix}-${process.pid}`);
  const child = fork(new URL('./embedded-init-child.ts', import.meta.url), [JSON.stringify({ dir: temp, startParams })], { execArgv: [], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => (code === 0 ? resolve() : reject(new Error(`creating the embedded database in ${dir} stopped (${signal ?? `exit code ${code}`})`))));
  });
  // an empty directory an earlier release created before its initdb (nothing in it was ever acknowledged)
  await fs.rm(dir, { recursive: true, force: true });
  await fs.rename(temp, dir);
}
