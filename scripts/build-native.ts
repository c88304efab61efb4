/**
 * `npm ci` / `npm install` (postinstall): compiles native/malloc-trim.c into
 * build/native/malloc-trim.node with the system C compiler, against the Node-API headers of the
 * Node.js the project runs on. The addon is optional: without a compiler, or on a system that is
 * not Linux, this prints why and exits 0, and the service runs without trimming its C heap
 * (src/memory.ts says so once in its start-up log line).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const source = path.join(root, 'native', 'malloc-trim.c');
const output = path.join(root, 'build', 'native', 'malloc-trim.node');

/** Where node_api.h is: beside the running Node.js (its own download, or a system install), else the system's. */
function includeDir(): string | undefined {
  const prefix = path.resolve(path.dirname(fs.realpathSync(process.execPath)), '..');
  const beside = path.join(prefix, 'include', 'node');
  // the `node` npm package runs the binary of a platform package, which carries the headers
  const platformPackages = path.join(prefix, 'node_modules');
  const fromPackages = fs.existsSync(platformPackages)
    ? fs.readdirSync(platformPackages).map((name) => path.join(platformPackages, name, 'include', 'node'))
    : [];
  return [beside, ...fromPackages, '/usr/include/node', '/usr/local/include/node'].find((dir) => fs.existsSync(path.join(dir, 'node_api.h')));
}

function skip(reason: string): never {
  console.warn(`native addon not built (${reason}): the service runs without returning freed C-heap pages to the system`);
  process.exit(0);
}

if (process.platform !== 'linux') skip(`malloc_trim is glibc's, and this is ${process.platform}`);
const include = includeDir();
if (!include) skip('no node_api.h found');
fs.mkdirSync(path.dirname(output), { recursive: true });
const compiler = process.env.CC ?? 'cc';
try {
  execFileSync(compiler, ['-shared', '-fPIC', '-O2', '-Wall', '-Wextra', '-Werror', `-I${include}`, source, '-o', output], { stdio: 'inherit' });
} catch (err) {
  skip(`${compiler} failed: ${err instanceof Error ? err.message : String(err)}`);
}
console.log(`native addon built: ${path.relative(root, output)}`);
