/**
 * `npm start`'s command line as package.json has it: the environment it sets (glibc's malloc
 * tunables) and the Node and V8 flags before the script. The bench starts the service with exactly
 * these, so what it measures is what `npm start` runs.
 */
import fs from 'node:fs';
import path from 'node:path';

export interface StartCommand {
  env: Record<string, string>;
  execArgv: string[];
}

export function startCommand(root: string): StartCommand {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const words = pkg.scripts.start.split(/\s+/).filter(Boolean);
  const node = words.indexOf('node');
  if (node < 0 || words.at(-1) !== 'src/server.ts') throw new Error(`unexpected start script: ${pkg.scripts.start}`);
  const env = Object.fromEntries(words.slice(0, node).map((w) => [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)]));
  // a relative path (./src/compile-cache.js) is relative to the project, wherever the bench runs from
  const execArgv = words.slice(node + 1, -1).map((w) => (w.startsWith('./') ? path.join(root, w) : w));
  return { env, execArgv };
}
