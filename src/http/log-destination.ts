import fs from 'node:fs';

/** A batch this long is written at once, without waiting for the end of the loop turn. */
const WRITE_AT_BYTES = 64 * 1024;

/** How long a write that met a full pipe (EAGAIN) waits before it tries again. */
const FULL_PIPE_WAIT_MS = 1;

const pause = new Int32Array(new SharedArrayBuffer(4));

/** Writes all of `bytes` to `fd`, waiting out a full non-blocking pipe as a blocking write would. */
function writeAll(fd: number, bytes: Buffer): void {
  let offset = 0;
  while (offset < bytes.length) {
    try {
      offset += fs.writeSync(fd, bytes, offset);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
      Atomics.wait(pause, 0, 0, FULL_PIPE_WAIT_MS);
    }
  }
}

/**
 * A log destination that writes the lines of one event-loop turn together, synchronously, at the end
 * of that turn (a `setImmediate`), and at once when they reach WRITE_AT_BYTES. Under load the access
 * lines of every request a turn completes go out in one `write`: one line per `write` took 7.6 % of
 * the API main thread's time on `GET /items` at saturation (bench/README.md, finding 62). At rest a turn
 * completes one request and its line goes out alone, from the main thread: no pool thread
 * is woken (finding 61). What is buffered is written when the process exits, including on a fatal
 * error or `process.exit`; only a process killed outright (SIGKILL, the OOM killer) loses the lines
 * of its last turn. When the reader of a pipe falls behind, the write waits for it.
 */
export class TurnBufferedDestination {
  private readonly fd: number;
  private lines: string[] = [];
  private bytes = 0;
  private scheduled = false;

  constructor(fd: number) {
    this.fd = fd;
    process.on('exit', () => this.writeNow());
  }

  write(line: string): void {
    this.lines.push(line);
    // the length in UTF-16 units: a bound to write at, not the byte count
    this.bytes += line.length;
    if (this.bytes >= WRITE_AT_BYTES) {
      this.writeNow();
    } else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.writeNow();
      });
    }
  }

  /** Writes what is buffered, now. */
  writeNow(): void {
    if (this.lines.length === 0) return;
    const text = this.lines.length === 1 ? this.lines[0] : this.lines.join('');
    this.lines = [];
    this.bytes = 0;
    writeAll(this.fd, Buffer.from(text, 'utf8'));
  }

  /** `logger.flush(cb)`: the buffered lines are written before `cb` runs. */
  flush(cb?: (err?: Error) => void): void {
    try {
      this.writeNow();
    } catch (err) {
      cb?.(err as Error);
      return;
    }
    cb?.();
  }

  flushSync(): void {
    this.writeNow();
  }
}
