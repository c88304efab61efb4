import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promisify } from 'node:util';
import { ERROR_STATUS } from '../../src/http/errors.ts';
import { defer, waitFor } from '../helpers/app.ts';
import { freePort, start, untilHealthy } from '../helpers/server-process.ts';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '..', '..');

/** The README and the docs pages written with it; security, tracing and reliability have their own owners. */
const PAGES = ['README.md', 'docs/api.md', 'docs/webhooks.md', 'docs/configuration.md', 'docs/operations.md', 'docs/architecture.md', 'docs/testing.md'];
/** Pages the README links to that are written on other branches: a missing one is reported, not failed. */
const WRITTEN_ELSEWHERE = new Set(['docs/security.md', 'docs/tracing.md']);

/** Names in capitals that are not settings: an order's failure reasons, v1's cancellation reason. */
const NOT_VARIABLES = new Set(['INSUFFICIENT_STOCK', 'PRODUCT_UNAVAILABLE', 'TOTAL_TOO_LARGE', 'PROCESSING_ERROR']);

const read = (file: string) => fs.readFile(path.join(root, file), 'utf8');
const exists = (file: string) => fs.access(path.join(root, file)).then(() => true, () => false);

/** GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as hyphens. */
const headingSlugs = (text: string) =>
  new Set([...text.replace(/^```[\s\S]*?^```$/gm, '').matchAll(/^#{1,6} (.+)$/gm)].map((m) => m[1].trim().toLowerCase().replace(/[^\p{L}\p{N}\s-]/gu, '').replace(/\s/g, '-')));

/** The fenced blocks of `text` with their language. */
const blocks = (text: string) => [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1], text: m[2] }));

describe('the README and the docs pages', () => {
  it('the README is at most 300 lines and says none of what the service does not do', async () => {
    const readme = await read('README.md');
    assert.ok(readme.split('\n').length <= 301, `${readme.split('\n').length} lines`);
    for (const page of PAGES) {
      const text = await read(page);
      // issue 46's contradictions, and the mechanisms decisions 001 and 003 removed
      for (const stale of [/top bar/i, /All (API )?routes (live )?under/i, /THEN_COMMIT/, /subclass of `?pg\.Client/, /quietWhen/, /INBOUND_WORKER_LINGER_MS/]) {
        assert.doesNotMatch(text, stale, `${page}`);
      }
    }
    // one figure for an API process's memory after start-up
    const figures = new Set([...(await Promise.all(PAGES.map(read))).join('\n').matchAll(/\b(\d+(?:[.–-]\d+)?) MiB (?:right )?after start-up/g)].map((m) => m[1]));
    assert.ok(figures.size <= 1, [...figures].join(', '));
  });

  it('every npm script, environment variable and link they name exists', async (t) => {
    const pkg = JSON.parse(await read('package.json')) as { scripts: Record<string, string> };
    const config = await read('docs/configuration.md');
    const documented = new Set([...config.matchAll(/`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`/g)].map((m) => m[1]));
    for (const page of PAGES) {
      const text = await read(page);
      for (const [, script] of text.matchAll(/npm run ([\w:-]+)/g)) assert.ok(pkg.scripts[script], `${page}: npm run ${script}`);
      // every variable-like name in backticks or a shell block (NAME=…), except HTTP header and SQL names
      const names = [...text.matchAll(/`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`|\b([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)=/g)].map((m) => m[1] ?? m[2]);
      for (const name of names.filter((n) => !(n in ERROR_STATUS) && !NOT_VARIABLES.has(n))) {
        assert.ok(documented.has(name), `${page}: ${name} is not in docs/configuration.md`);
      }
      for (const [, target, anchor] of text.matchAll(/\]\(((?!https?:|#)[^)#\s]+)(?:#([^)]*))?\)/g)) {
        const file = path.normalize(path.join(path.dirname(page), target));
        if (await exists(file)) {
          if (anchor) assert.ok(headingSlugs(await read(file)).has(anchor), `${page} links to ${file}#${anchor}, which has no such heading`);
          continue;
        }
        if (WRITTEN_ELSEWHERE.has(file)) t.diagnostic(`${page} links to ${file}, written on another branch`);
        else assert.fail(`${page} links to ${file}, which does not exist`);
      }
    }
  });

  it("the quick start's sign-in and order, as written, against `npm start`'s process on a fresh data directory", { timeout: 180000 }, async (t) => {
    const readme = await read('README.md');
    const section = readme.slice(readme.indexOf('### Sign in and place an order'));
    const shell = blocks(section).find((b) => b.lang === 'sh')?.text ?? '';
    assert.match(shell, /<printed password>/);

    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'oas-readme-'));
    defer(t, () => fs.rm(dataDir, { recursive: true, force: true }));
    const port = await freePort();
    // what `npm start` runs (package.json), on a fresh DATA_DIR with no administrator configured
    const proc = start(t, 'src/server.ts', { PORT: String(port), DATA_DIR: dataDir, EMBEDDED_SHARED_BUFFERS_MB: '16', LOG_LEVEL: 'warn' }, ['--import', './src/compile-cache.js']);
    const base = `http://127.0.0.1:${port}`;
    await untilHealthy(base, proc);
    // the lines the README shows
    const printed = /^ {2}Administrator account created: admin@example\.com \/ (\S+)\n {2}\(shown once; set ADMIN_EMAIL and ADMIN_PASSWORD to choose your own\)$/m.exec(proc.stdout());
    assert.ok(printed, proc.stdout());
    assert.match(proc.stdout(), new RegExp(`^Docs: ${base}/docs$`, 'm'));

    const script = shell.replaceAll('http://127.0.0.1:8000', base).replace('<printed password>', printed[1]);
    const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', script], { cwd: dataDir });
    // curl prints each body without a line break after it
    const [placed, read1] = stdout.trim().split(/(?<=\})(?=\{)/).map((line) => JSON.parse(line) as { id: number; user_id: number; status: string; total_amount: number });
    assert.deepEqual({ id: placed.id, user_id: placed.user_id, status: placed.status, total_amount: placed.total_amount }, { id: 1, user_id: 1, status: 'pending', total_amount: 0 });
    assert.ok(['pending', 'processing', 'completed'].includes(read1.status), read1.status);
    // the last command again, until the worker has priced the order as the README's comment says
    const last = script.trim().split('\n').filter((l) => l.startsWith('curl')).at(-1)!;
    const token = (script.match(/TOKEN=\$\(([\s\S]*?)\)\n/) ?? [])[1];
    assert.ok(token, 'the block sets TOKEN');
    const completed = await waitFor(async () => {
      const { stdout: out } = await run('bash', ['-euo', 'pipefail', '-c', `TOKEN=$(${token})\n${last}`]);
      const order = JSON.parse(out) as { status: string; total_amount: number };
      return order.status === 'completed' ? order : undefined;
    }, 30000, 250);
    assert.equal(completed.total_amount, 19.99);
  });
});
