import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TurnBufferedDestination } from '../../src/http/log-destination.ts';

const moduleUrl = JSON.stringify(path.join(import.meta.dirname, '..', '..', 'src', 'http', 'log-destination.ts'));

/** Runs `body` with a destination writing to a fresh temporary file, and removes the file after. */
async function withTempFile(body: (out: { fd: number; read: () => string; dest: TurnBufferedDestination }) => Promise<void>): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oas-log-'));
  const file = path.join(dir, 'out.log');
  const fd = fs.openSync(file, 'w');
  try {
    await body({ fd, read: () => fs.readFileSync(file, 'utf8'), dest: new TurnBufferedDestination(fd) });
  } finally {
    fs.closeSync(fd);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Counts the write calls made on `fd` while `body` runs (and the turn it schedules). */
async function countWrites(fd: number, body: () => void): Promise<number> {
  const original = fs.writeSync;
  let writes = 0;
  fs.writeSync = ((...args: Parameters<typeof fs.writeSync>) => {
    if (args[0] === fd) writes++;
    return original(...args);
  }) as typeof fs.writeSync;
  try {
    body();
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    fs.writeSync = original;
  }
  return writes;
}

/** Runs `code` (an ES module that imports the destination as `TurnBufferedDestination`) in a child process. */
function child(code: string) {
  const script = `import { TurnBufferedDestination } from ${moduleUrl};\n${code}`;
  return spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', maxBuffer: 64 * 1048576 });
}

describe('the log destination (src/http/log-destination.ts)', () => {
  it('writes the lines of one turn together at its end, in order', () =>
    withTempFile(async ({ fd, read, dest }) => {
      const writes = await countWrites(fd, () => {
        for (const n of [1, 2, 3]) dest.write(`{"line":${n}}\n`);
        assert.equal(read(), '', 'nothing is written before the turn ends');
      });
      assert.equal(writes, 1);
      assert.equal(read(), '{"line":1}\n{"line":2}\n{"line":3}\n');
      // a line of a later turn goes out alone
      assert.equal(await countWrites(fd, () => dest.write('{"line":4}\n')), 1);
      assert.equal(read().split('\n').length, 5);
    }));

  it('writes at once when a turn has buffered 64 KiB, and multi-byte text whole', () =>
    withTempFile(async ({ read, dest }) => {
      const line = `{"msg":"${'é'.repeat(1000)}"}\n`;
      for (let i = 0; i < 70; i++) dest.write(line);
      assert.ok(read().length >= 64 * line.length, 'the first 64 KiB went out without waiting for the turn');
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(read(), line.repeat(70));
    }));

  it('flush(cb) writes what is buffered before calling back', () =>
    withTempFile(async ({ read, dest }) => {
      dest.write('a\n');
      await new Promise<void>((resolve, reject) => dest.flush((err) => (err ? reject(err) : resolve())));
      assert.equal(read(), 'a\n');
    }));

  it('a process that exits or dies of an uncaught error still writes the lines of its last turn', () => {
    const exited = child(`const d = new TurnBufferedDestination(1); d.write('one\\n'); d.write('two\\n'); process.exit(3);`);
    assert.equal(exited.status, 3);
    assert.equal(exited.stdout, 'one\ntwo\n');
    const crashed = child(`const d = new TurnBufferedDestination(1); d.write('before the crash\\n'); throw new Error('boom');`);
    assert.equal(crashed.status, 1);
    assert.equal(crashed.stdout, 'before the crash\n');
    assert.match(crashed.stderr, /boom/);
  });

  it('hands a burst of many times a pipe buffer through the pipe whole, in order', () => {
    const lines = 20_000;
    const res = child(`const d = new TurnBufferedDestination(1); for (let i = 0; i < ${lines}; i++) d.write(JSON.stringify({ i, pad: 'x'.repeat(100) }) + '\\n');`);
    assert.equal(res.status, 0, res.stderr);
    const got = res.stdout.trimEnd().split('\n').map((l) => (JSON.parse(l) as { i: number }).i);
    assert.equal(got.length, lines);
    assert.ok(got.every((v, i) => v === i));
  });
});
