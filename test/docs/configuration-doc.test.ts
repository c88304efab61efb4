import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig, type Config } from '../../src/config.ts';

const root = path.resolve(import.meta.dirname, '..', '..');

/** Every variable src/config.ts reads (with its readers in config-values.ts): they all take `(env, 'NAME'`. */
async function settingsRead(): Promise<{ names: Set<string>; numeric: Map<string, keyof Config> }> {
  const files = ['config.ts', 'config-values.ts'].map((f) => fs.readFile(path.join(root, 'src', f), 'utf8'));
  const source = (await Promise.all(files)).join('\n');
  const names = new Set([...source.matchAll(/\(env, '([A-Z][A-Z0-9_]+)'/g)].map((m) => m[1]));
  // `key: int(env, 'NAME', default, …)` and `num(…)`: the Config key whose default the page states
  const numeric = new Map([...source.matchAll(/(\w+): (?:int|num)\(env, '([A-Z0-9_]+)'/g)].map((m) => [m[2], m[1] as keyof Config]));
  return { names, numeric };
}

/** The rows of the page's tables: the variables of each row's first cell, and the row's text. */
async function documentedRows(): Promise<Map<string, string>> {
  const page = await fs.readFile(path.join(root, 'docs', 'configuration.md'), 'utf8');
  const rows = new Map<string, string>();
  for (const line of page.split('\n').filter((l) => l.startsWith('| `'))) {
    const first = line.split('|')[1];
    for (const m of first.matchAll(/`([A-Z][A-Z0-9_]+)`/g)) rows.set(m[1], line);
  }
  return rows;
}

describe('docs/configuration.md', () => {
  it('has a row for every variable src/config.ts reads, and none it does not', async () => {
    const { names } = await settingsRead();
    const rows = await documentedRows();
    assert.ok(names.size > 50, `${names.size} variables found in src/config.ts`);
    assert.deepEqual([...names].filter((n) => !rows.has(n)), [], 'read by src/config.ts, missing from docs/configuration.md');
    assert.deepEqual([...rows.keys()].filter((n) => !names.has(n)), [], 'in docs/configuration.md, never read by src/config.ts');
  });

  it("states each numeric default the code applies (the embedded database's, where it differs)", async () => {
    const { numeric } = await settingsRead();
    const rows = await documentedRows();
    const defaults = loadConfig({});
    for (const [name, key] of numeric) {
      const value = defaults[key];
      const defaultCell = rows.get(name)?.split('|')[2] ?? '';
      assert.ok(defaultCell.includes(`\`${String(value)}\``), `${name}: the default cell "${defaultCell.trim()}" does not state ${String(value)}`);
    }
  });
});
