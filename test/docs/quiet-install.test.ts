import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

const root = path.resolve(import.meta.dirname, '..', '..');
const readJson = async <T>(file: string) => JSON.parse(await fs.readFile(path.join(root, file), 'utf8')) as T;

// What keeps `npm ci` quiet and safe on a machine older than Node.js 24 (decision 121; the README's
// Requirements): npm prints errors only, and an install script runs only when package.json says so.
// Running npm ci itself here would need the registry; these are the settings it depends on.
describe('npm ci on any Node.js from 20: the settings decision 121 rests on', () => {
  it('.npmrc prints errors only and fails on an install script nobody reviewed', async () => {
    const npmrc = await fs.readFile(path.join(root, '.npmrc'), 'utf8');
    const settings = new Map(
      npmrc
        .split('\n')
        .filter((l) => l.trim() && !l.trim().startsWith('#'))
        .map((l) => l.split('=').map((s) => s.trim()) as [string, string]),
    );
    assert.equal(settings.get('loglevel'), 'error');
    assert.equal(settings.get('strict-allow-scripts'), 'true');
  });

  it('every package of the lockfile with an install script is approved or denied in allowScripts', async () => {
    const lock = await readJson<{ packages: Record<string, { hasInstallScript?: boolean }> }>('package-lock.json');
    const pkg = await readJson<{ allowScripts: Record<string, boolean>; engines: { node: string }; devDependencies: Record<string, string> }>('package.json');
    const withScripts = Object.entries(lock.packages)
      .filter(([where, p]) => where !== '' && p.hasInstallScript)
      .map(([where]) => where.slice(where.lastIndexOf('node_modules/') + 'node_modules/'.length));
    assert.ok(withScripts.includes('node'), 'the Node.js 24 package installs its binary by a script');
    assert.deepEqual(withScripts.filter((name) => !(name in pkg.allowScripts)), [], 'install scripts neither approved nor denied');
    assert.equal(pkg.allowScripts.node, true);
    // the runtime every script runs on is the pinned Node.js 24, whatever runs npm
    assert.match(pkg.devDependencies.node, /^24\./);
    assert.equal(pkg.engines.node, '>=24');
  });
});
