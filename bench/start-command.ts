/**
 * An npm start script's command line as package.json has it (`start`, or `start:api` for a fleet's
 * API process): the environment it sets (glibc's malloc tunables, the role) and the Node and V8 flags
 * before the script. The bench starts the service with exactly these, so it measures what they run.
 */
import fs from 'node:fs';
import path from 'node:path';

export interface StartCommand {
  env: Record<string, string>;
  execArgv: string[];
}

export function startCommand(root: string, script: 'start' | 'start:api' = 'start'): StartCommand {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  const line = pkg.scripts[script];
  const words = line.split(/\s+/).filter(Boolean);
  const node = words.indexOf('node');
  if (node < 0 || words.at(-1) !== 'src/server.ts') throw new Error(`unexpected ${script} script: ${line}`);
  // NAME=value words before `node` (not `exec`)
  const assignments = words.slice(0, node).filter((w) => w.includes('='));
  const env = Object.fromEntries(assignments.map((w) => [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)]));
  // a relative path (./src/compile-cache.js) is relative to the project, wherever the bench runs from
  const execArgv = words.slice(node + 1, -1).map((w) => (w.startsWith('./') ? path.join(root, w) : w));
  return { env, execArgv };
}
