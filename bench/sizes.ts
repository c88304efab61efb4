/**
 * Issue 53's size guard, counted as `wc -l` counts (comments and blank lines included): the `.ts`
 * files of src/ without its migrations, and of the core (src/db, src/jobs, src/modules/orders).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Target } from './report.ts';

const SRC_GOAL = 12_500;
const CORE_GOAL = 2_800;
const CORE = ['src/db', 'src/jobs', 'src/modules/orders'];

function lines(dir: string): number {
  return fs.readdirSync(dir, { withFileTypes: true, recursive: true }).reduce((sum, e) => {
    const file = path.join(e.parentPath, e.name);
    if (!e.isFile() || !e.name.endsWith('.ts') || file.includes(`${path.sep}migrations${path.sep}`)) return sum;
    return sum + (fs.readFileSync(file, 'utf8').match(/\n/g)?.length ?? 0);
  }, 0);
}

export function sizeTargets(root: string): Target[] {
  const src = lines(path.join(root, 'src'));
  const core = CORE.reduce((sum, dir) => sum + lines(path.join(root, dir)), 0);
  const fmt = (n: number) => `${n.toLocaleString('en')} lines`;
  return [
    { name: 'src without migrations (wc -l)', value: fmt(src), target: `≤ ${fmt(SRC_GOAL)}`, pass: src <= SRC_GOAL },
    { name: 'src/db + src/jobs + src/modules/orders (wc -l)', value: fmt(core), target: `≤ ${fmt(CORE_GOAL)}`, pass: core <= CORE_GOAL },
  ];
}
