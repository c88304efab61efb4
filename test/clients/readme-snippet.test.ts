import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promisify } from 'node:util';
import { buildTestApp, createUser, defer } from '../helpers/app.ts';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '..', '..');

/** The fenced blocks of the README's "From TypeScript" section, in order, with their language. */
async function typedClientBlocks(): Promise<{ lang: string; text: string }[]> {
  const readme = await fs.readFile(path.join(root, 'README.md'), 'utf8');
  const start = readme.indexOf('\n### From TypeScript\n');
  assert.ok(start >= 0, 'the README has a "From TypeScript" section');
  const end = readme.indexOf('\n#', start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/^```(\w+)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1], text: m[2] }));
}

/** What the snippet's shell block pins with `npm install`, by package. */
function pinned(shell: string): Map<string, string> {
  return new Map([...shell.matchAll(/\b((?:@[\w-]+\/)?[\w.-]+)@(\d+\.\d+\.\d+)\b/g)].map((m) => [m[1], m[2]]));
}

async function installedVersion(name: string): Promise<string> {
  const manifest = JSON.parse(await fs.readFile(path.join(root, 'node_modules', name, 'package.json'), 'utf8')) as { version: string };
  return manifest.version;
}

async function tsc(dir: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout } = await run(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], { cwd: dir });
    return { code: 0, output: stdout };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? 1, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

// The README's "From TypeScript" steps, followed in a scratch directory outside this repository
// (so no tsconfig, @types or package.json of ours is in reach): its shell block's files and package
// type, its tsconfig.json and its order.ts exactly as written, then `tsc` and Node.js.
describe("the README's typed-client snippet in a project of its own", { timeout: 240000 }, () => {
  it('type-checks under tsc --strict as written, fails to without the v2 version, and runs against the service', async (t) => {
    const blocks = await typedClientBlocks();
    const shell = blocks.find((b) => b.lang === 'sh')?.text ?? '';
    const tsconfig = blocks.find((b) => b.lang === 'json')?.text ?? '';
    const snippet = blocks.find((b) => b.lang === 'ts')?.text ?? '';
    assert.match(tsconfig, /"strict": true/);
    assert.match(snippet, /from '\.\/clients\/typescript\/client\.ts'/);

    // the files the shell block copies, from this checkout
    const copied = /cp .+?clients\/typescript\/\{([^}]+)\} clients\/typescript\//.exec(shell)?.[1].split(',') ?? [];
    assert.deepEqual([...copied].sort(), ['client.ts', 'schema-v1.d.ts', 'schema-v2.d.ts']);
    assert.match(shell, /npm pkg set type=module/);
    // the versions it pins are the ones this repository type-checks with
    const pins = pinned(shell);
    for (const name of ['openapi-fetch', 'typescript']) assert.equal(pins.get(name), await installedVersion(name), `${name} pinned in the README`);

    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'oas-readme-client-'));
    defer(t, () => fs.rm(dir, { recursive: true, force: true }));
    await fs.mkdir(path.join(dir, 'clients', 'typescript'), { recursive: true });
    for (const file of copied) await fs.copyFile(path.join(root, 'clients', 'typescript', file), path.join(dir, 'clients', 'typescript', file));
    await fs.writeFile(path.join(dir, 'package.json'), JSON.stringify({ name: 'readme-client', private: true, type: 'module' }));
    await fs.writeFile(path.join(dir, 'tsconfig.json'), tsconfig);
    await fs.writeFile(path.join(dir, 'order.ts'), snippet);
    // `npm install openapi-fetch`: the copy this repository installed (it brings its own dependency)
    await fs.mkdir(path.join(dir, 'node_modules'));
    await fs.symlink(path.join(root, 'node_modules', 'openapi-fetch'), path.join(dir, 'node_modules', 'openapi-fetch'), 'dir');

    const checked = await tsc(dir);
    assert.equal(checked.code, 0, checked.output);
    assert.equal(checked.output.trim(), '');

    // the same project with the version left out speaks v1, whose document has no v2 paths
    await fs.writeFile(path.join(dir, 'order.ts'), snippet.replace(", version: 'v2'", ''));
    const v1 = await tsc(dir);
    assert.notEqual(v1.code, 0);
    assert.match(v1.output, /order\.ts\(\d+,\d+\): error TS\d+/);
    await fs.writeFile(path.join(dir, 'order.ts'), snippet);

    // run as written against a fresh service with the demo catalogue, at this test's address
    const app = await buildTestApp(t, { seedDemoCatalog: true });
    await createUser(app, { email: 'you@example.com', password: 'your password', login: false });
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    assert.match(snippet, /'http:\/\/127\.0\.0\.1:8000'/);
    await fs.writeFile(path.join(dir, 'order.ts'), snippet.replace('http://127.0.0.1:8000', base));
    const { stdout, stderr } = await run(process.execPath, ['order.ts'], { cwd: dir });
    assert.equal(stderr, '');
    assert.match(stdout, /^\d+ pending\ncancelled\n$/);
  });
});
