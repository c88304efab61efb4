/**
 * `npm run check:structure`: the module boundaries of src/, checked from the source text.
 * 1. src/http/ imports nothing from src/modules/ (the HTTP layer is given what it needs).
 * 2. Every table's SQL lives in the module that owns it (migrations, which describe the schema's
 *    history, apart).
 * 3. No import cycle between module folders.
 * Prints each violation and exits 1 when there is one.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const src = path.join(root, 'src');

/**
 * table → the module folder (src/modules/<name>) whose repository holds its SQL, or a folder of src/
 * outside the modules (`src/jobs`) for the tables of the shared infrastructure
 */
const OWNERS: Record<string, string> = {
  users: 'users',
  job_links: 'src/jobs',
  refresh_tokens: 'auth',
  password_reset_tokens: 'auth',
  products: 'products',
  orders: 'orders',
  order_items: 'orders',
  order_events: 'orders',
  idempotency_keys: 'orders',
  items: 'items',
  inbound_webhooks: 'inbound-webhooks',
  webhook_subscriptions: 'outbound-webhooks',
  webhook_messages: 'outbound-webhooks',
  webhook_deliveries: 'outbound-webhooks',
  platform_cancellations: 'inbound-webhooks',
};

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return files(full);
    return e.name.endsWith('.ts') ? [full] : [];
  });
}

const rel = (f: string) => path.relative(root, f);
const moduleOf = (f: string): string | undefined => /^src\/modules\/([^/]+)\//.exec(rel(f))?.[1];
const problems: string[] = [];
const moduleImports = new Map<string, Map<string, string>>();

for (const file of files(src)) {
  const text = fs.readFileSync(file, 'utf8');
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    const where = `${rel(file)}:${i + 1}`;
    for (const m of line.matchAll(/from '(\.[^']+)'/g)) {
      const target = path.resolve(path.dirname(file), m[1]);
      const targetModule = moduleOf(target);
      if (rel(file).startsWith('src/http/') && targetModule !== undefined) problems.push(`${where}: src/http imports ${rel(target)}`);
      const own = moduleOf(file);
      if (own && targetModule && own !== targetModule) {
        const edges = moduleImports.get(own) ?? new Map<string, string>();
        if (!edges.has(targetModule)) edges.set(targetModule, where);
        moduleImports.set(own, edges);
      }
    }
    if (rel(file).startsWith('src/db/migrations/') || rel(file) === 'src/db/schema.ts') return;
    const tables = [
      ...line.matchAll(/\b(?:selectFrom|insertInto|updateTable|deleteFrom|innerJoin|leftJoin|rightJoin|fullJoin)\(\s*'([a-z_]+)/g),
      ...line.matchAll(/\b(?:FROM|JOIN|UPDATE|INTO|TABLE)\s+([a-z_]+)\b/g),
    ].map((m) => m[1]);
    for (const table of tables) {
      const owner = OWNERS[table];
      if (owner === undefined) continue;
      const ownerDir = owner.startsWith('src/') ? owner : `src/modules/${owner}`;
      if (!rel(file).startsWith(`${ownerDir}/`)) problems.push(`${where}: SQL on ${table}, which belongs to ${ownerDir}/`);
    }
  });
}

// import cycles between module folders (depth-first search over the folder graph)
const state = new Map<string, 'visiting' | 'done'>();
function visit(module: string, trail: string[]): void {
  if (state.get(module) === 'done') return;
  if (state.get(module) === 'visiting') {
    const cycle = [...trail.slice(trail.indexOf(module)), module];
    const steps = cycle.slice(0, -1).map((m, i) => `${m} → ${cycle[i + 1]} (${moduleImports.get(m)?.get(cycle[i + 1])})`);
    problems.push(`import cycle between modules: ${steps.join(', ')}`);
    return;
  }
  state.set(module, 'visiting');
  for (const next of moduleImports.get(module)?.keys() ?? []) visit(next, [...trail, module]);
  state.set(module, 'done');
}
for (const module of moduleImports.keys()) visit(module, []);

if (problems.length > 0) {
  for (const p of problems) console.error(p);
  process.exit(1);
}
const edges = [...moduleImports].map(([from, to]) => `${from} → ${[...to.keys()].sort().join(', ')}`);
console.log(`structure ok: src/http imports no module; every table's SQL is in its module; module imports form no cycle\n  ${edges.sort().join('\n  ')}`);
