/**
 * `npm test`: the test files in batches of a few, each batch one Node process that runs its files
 * one after another (node:test's `--test-isolation=none`), a few batches at a time; each batch's
 * report is printed whole when it ends, then the totals and what was skipped, and why.
 *
 * What a process pays once — loading the service's modules, compiling the embedded database's
 * WebAssembly, warming the JIT — is then paid once per batch instead of once per file: about a
 * quarter of the suite's CPU time. Every file still builds its own apps and databases.
 *
 *   node test/run.ts [file or folder …]     those files (default: every test/**\/*.test.ts)
 *   TEST_CONCURRENCY=N                       batches at a time (default: the cores + 1: the files
 *                                            also wait on timers and the network)
 *   TEST_BATCH_SIZE=N                        files per batch (default 4)
 *   TEST_BATCH_TIMEOUT_SECONDS=N             a batch still running after N s is killed and fails
 *                                            (default 600; the longest takes about a minute)
 *
 * One file also runs on its own: `node --test test/…/x.test.ts`.
 */
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { globalSetup } from './helpers/global-setup.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const skipReporter = path.join(root, 'test/helpers/skip-reporter.ts');
const COUNTS = ['tests', 'suites', 'pass', 'fail', 'cancelled', 'skipped', 'todo'] as const;
type Counts = Record<(typeof COUNTS)[number], number>;

interface BatchResult {
  files: string[];
  ok: boolean;
  counts: Counts;
  /** one line per skipped test or suite: file, name, reason (test/helpers/skip-reporter.ts) */
  skips: string[];
}

const started = performance.now();
const files = testFiles(process.argv.slice(2));
if (files.length === 0) {
  console.error('no test files');
  process.exit(1);
}
// the migrated database every test database is a copy of, made once for all the batches
await globalSetup();
// the batches' processes keep V8's compiled code of the modules they load: each loads the same ones
process.env.NODE_COMPILE_CACHE ??= path.join(os.tmpdir(), 'oas-test-compile-cache');

const batchSize = Math.max(1, Number(process.env.TEST_BATCH_SIZE) || 4);
const lanes = Math.max(1, Number(process.env.TEST_CONCURRENCY) || os.availableParallelism() + 1);
// node:test times out tests, not `before` hooks: a hook that never settles would hold the run forever
const batchTimeoutMs = 1000 * (Number(process.env.TEST_BATCH_TIMEOUT_SECONDS) || 600);
const queue = batches(files, batchSize);
const results: BatchResult[] = [];
await Promise.all(
  Array.from({ length: Math.min(lanes, queue.length) }, async () => {
    for (let batch = queue.shift(); batch; batch = queue.shift()) results.push(await runBatch(batch));
  }),
);

const total = Object.fromEntries(COUNTS.map((k) => [k, results.reduce((sum, r) => sum + r.counts[k], 0)])) as Counts;
const failed = results.filter((r) => !r.ok).flatMap((r) => r.files.map((f) => path.relative(root, f)));
const skips = results.flatMap((r) => r.skips).sort();
console.log(
  [
    '',
    `ℹ files ${files.length} in ${results.length} batches, ${lanes} at a time`,
    ...COUNTS.map((k) => `ℹ ${k} ${total[k]}`),
    `ℹ duration ${((performance.now() - started) / 1000).toFixed(1)} s`,
    ...(skips.length > 0 ? [`ℹ skipped, and why:`, ...skips.map((line) => `  ${line}`)] : []),
  ].join('\n'),
);
if (failed.length > 0) {
  console.log(`\n✖ failing batches' files:\n${failed.map((f) => `  ${f}`).join('\n')}`);
  process.exit(1);
}

/**
 * Runs one batch in its own process; prints its report (and its totals) when it ends. A second
 * reporter writes the batch's skipped tests to a file of its own, read when the batch ends.
 */
function runBatch(batch: string[]): Promise<BatchResult> {
  const t0 = performance.now();
  const skipFile = path.join(os.tmpdir(), `oas-test-skips-${process.pid}-${crypto.randomUUID()}.txt`);
  const reporters = ['--test-reporter=spec', '--test-reporter-destination=stdout', `--test-reporter=${skipReporter}`, `--test-reporter-destination=${skipFile}`];
  // --test-force-exit: a handle a failed test left open does not keep the batch alive once its report is written
  const args = ['--test', '--test-isolation=none', '--test-force-exit', '--test-timeout=120000', ...reporters, ...batch];
  const child = spawn(process.execPath, [...process.execArgv, ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
  child.stderr.on('data', (d: Buffer) => (out += d.toString('utf8')));
  const watchdog = setTimeout(() => {
    out += `\n✖ the batch was still running after ${batchTimeoutMs / 1000} s (TEST_BATCH_TIMEOUT_SECONDS): killed\n`;
    child.kill('SIGKILL');
  }, batchTimeoutMs);
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(watchdog);
      const seconds = (performance.now() - t0) / 1000;
      const counts = Object.fromEntries(COUNTS.map((k) => [k, Number(new RegExp(`^ℹ ${k} (\\d+)$`, 'm').exec(out)?.[1] ?? 0)])) as Counts;
      const ok = code === 0;
      // a batch that died before its totals still counts as a failure
      if (!ok && counts.fail === 0) counts.fail = 1;
      const names = batch.map((f) => path.relative(root, f)).join(', ');
      process.stdout.write(`\n▶ batch: ${names} (${seconds.toFixed(1)} s${ok ? '' : `, exit ${signal ?? code}`})\n${out}`);
      const skips = fs.readFileSync(skipFile, { encoding: 'utf8', flag: 'a+' }).split('\n').filter(Boolean);
      fs.rmSync(skipFile, { force: true });
      resolve({ files: batch, ok, counts, skips });
    });
  });
}

/**
 * The files in batches of about `size`, the largest files spread first over the batches (a large
 * file usually runs long), the batches heaviest first, so short ones even out the lanes' ends.
 */
function batches(list: string[], size: number): string[][] {
  const sorted = list.map((f) => ({ f, weight: fs.statSync(f).size })).sort((a, b) => b.weight - a.weight);
  const out = Array.from({ length: Math.ceil(sorted.length / size) }, () => ({ files: [] as string[], weight: 0 }));
  for (const { f, weight } of sorted) {
    const lightest = out.reduce((min, b) => (b.weight < min.weight ? b : min));
    lightest.files.push(f);
    lightest.weight += weight;
  }
  return out.sort((a, b) => b.weight - a.weight).map((b) => b.files);
}

/** The test files under the given files or folders (default: test/). */
function testFiles(args: string[]): string[] {
  const found = new Set<string>();
  const visit = (p: string) => {
    const stat = fs.statSync(p, { throwIfNoEntry: false });
    if (!stat) throw new Error(`no such file or folder: ${p}`);
    if (stat.isDirectory()) {
      for (const entry of fs.readdirSync(p)) visit(path.join(p, entry));
    } else if (p.endsWith('.test.ts')) found.add(path.resolve(p));
  };
  for (const arg of args.length > 0 ? args : [path.join(root, 'test')]) visit(arg);
  return [...found];
}
