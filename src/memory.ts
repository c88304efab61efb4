/**
 * Giving memory back to the operating system when the process no longer needs it: once after
 * start-up, and whenever the process has been idle for a while after it grew.
 *
 * V8 sizes its heap for throughput. Start-up (migrations, module evaluation, route registration)
 * and any burst of load grow the young generation to tens of MB and the old generation ahead of
 * what is live, and V8 keeps that size: an ordinary collection leaves it committed, and V8's memory
 * reducer does not run in a process that is merely idle. The "last resort" collection of V8's gc
 * extension (the one V8 runs on a low-memory notification) collects everything and shrinks the
 * young generation back to its minimum. It takes tens of milliseconds of the main thread, so it
 * runs only where nothing waits for it: before the first request, and after a stretch with the
 * event loop idle. Under load the heap grows again to what the load needs; V8 flags that bound the
 * heap instead cost CPU on every request (bench/README.md, finding 36).
 *
 * The gc function is taken from a fresh vm context created while `--expose-gc` is set, then the flag
 * is cleared: nothing else sees a global `gc`, and V8's flags (which key the compile cache) are as
 * they were.
 *
 * The collection frees V8's heap pages, and with them the C-heap memory that dead objects held
 * (array-buffer contents, compiler zones). glibc keeps freed C-heap pages mapped for reuse and
 * returns only the top of each arena: after start-up the main arena held 17 MB, 13 of them free.
 * `malloc_trim(0)` gives back every whole free page; Node.js does not expose it, so a small
 * Node-API addon does (native/malloc-trim.c, built by `npm ci`; without it nothing is trimmed).
 */
import module, { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';

type GcOptions = { type: 'major'; execution: 'sync'; flavor: 'last-resort' };

export interface MemoryRelease {
  rssBeforeMib: number;
  rssAfterMib: number;
  /** the collection and the trim together */
  gcMs: number;
  /** freed C-heap pages were returned to the system; null: the addon is not built, or not glibc */
  mallocTrimmed: boolean | null;
}

const mib = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10;

let lastResortGc: ((options: GcOptions) => void) | null | undefined;

/** V8's gc function, or null on a runtime without the extension (then nothing is collected). */
function gcFunction(): ((options: GcOptions) => void) | null {
  if (lastResortGc === undefined) {
    v8.setFlagsFromString('--expose-gc');
    try {
      const gc: unknown = vm.runInNewContext('typeof gc === "function" ? gc : null');
      lastResortGc = typeof gc === 'function' ? (gc as (options: GcOptions) => void) : null;
    } finally {
      v8.setFlagsFromString('--no-expose-gc');
    }
  }
  return lastResortGc;
}

type MallocTrim = () => boolean | null;
let mallocTrim: MallocTrim | null | undefined;

/** glibc's malloc_trim(0) through native/malloc-trim.c (null on another C library), or null where the addon was not built. */
function mallocTrimFunction(): MallocTrim | null {
  if (mallocTrim === undefined) {
    try {
      mallocTrim = (createRequire(import.meta.url)('../build/native/malloc-trim.node') as { trim: MallocTrim }).trim;
    } catch {
      mallocTrim = null;
    }
  }
  return mallocTrim;
}

/**
 * Whether this process's flags leave bytecode flushing to V8's default (on): then a release may turn
 * it off for its own collection and back on after it.
 */
const defaultBytecodeFlushing = ![...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].some((arg) => /flush[-_]bytecode/.test(arg));

/**
 * One full collection that also shrinks the heap, then the C heap's free pages returned to the
 * system; what the process held before and after.
 *
 * V8 drops a function's compiled code once it has gone unused through a few full collections, and
 * a last-resort collection runs several: after releases, the load that comes back parses, compiles
 * and optimises again what it runs. `keepCode` turns that off for the release's own collection (the
 * idle release: what served the last load will serve the next). Measured after an idle release, on
 * `GET /items` at saturation: 0.11–0.15 ms of API CPU per request from the third second on, against
 * 0.11–0.13 without the flush, and 101 MiB resident after the release against 114
 * (bench/README.md, finding 62). Code that stays unused is still dropped by V8's ordinary ageing.
 */
export function releaseMemory(options: { keepCode?: boolean } = {}): MemoryRelease {
  const rssBefore = process.memoryUsage.rss();
  const started = performance.now();
  const gc = gcFunction();
  const keepCode = options.keepCode === true && defaultBytecodeFlushing && gc !== null;
  if (keepCode) v8.setFlagsFromString('--no-flush-bytecode');
  try {
    gc?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  } finally {
    if (keepCode) v8.setFlagsFromString('--flush-bytecode');
  }
  const mallocTrimmed = mallocTrimFunction()?.() ?? null;
  return { rssBeforeMib: mib(rssBefore), rssAfterMib: mib(process.memoryUsage.rss()), gcMs: Math.round(performance.now() - started), mallocTrimmed };
}

/**
 * Once everything is loaded, before the process takes work. The compile cache (src/compile-cache.js)
 * is written now, not only at a clean exit, so a process that is killed still leaves a warm cache
 * for the next start.
 */
export function releaseStartupMemory(): MemoryRelease {
  module.flushCompileCache();
  return releaseMemory();
}

/** Event-loop utilisation below this, over a whole second, counts as an idle second. */
const IDLE_UTILISATION = 0.02;

/**
 * With a count of the work taken in (`IdleMemoryOptions.activity`), a second in which it did not move
 * counts as idle unless the loop was busy at least this much of it. What runs then is the runtime's
 * own: V8's memory reducer starts a full collection a few seconds after load stops, which alone took
 * a second past IDLE_UTILISATION, so the count of idle seconds started over and the release came
 * too late or never (bench/README.md, finding 61). It frees V8's heap but not the C heap's free
 * pages, which only the release gives back.
 */
const QUIET_UTILISATION = 0.5;

export interface IdleMemoryOptions {
  /** consecutive idle seconds before a release */
  idleSeconds: number;
  /** how much the resident set must have grown since the last release, in bytes, for another */
  minGrowthBytes?: number;
  /** the length of one observation, in ms (tests shorten it) */
  tickMs?: number;
  /**
   * A count of the work the process has taken in (the requests it received): an observation in
   * which it did not move is idle unless the loop was busy most of it (QUIET_UTILISATION). Without
   * it, only a loop busy less than IDLE_UTILISATION of the observation is idle.
   */
  activity?: () => number;
  onRelease: (release: MemoryRelease) => void;
}

/**
 * Releases memory after `idleSeconds` consecutive idle seconds (see `activity`), when the resident
 * set has grown by at least `minGrowthBytes` since the last release (in V8's heap or in the C heap,
 * which load grows as well): at most once per idle stretch, and never while the process is busy.
 * Returns the function that stops watching.
 */
export function watchIdleMemory(options: IdleMemoryOptions): () => void {
  const { idleSeconds, minGrowthBytes = 32 * 1048576, tickMs = 1000, activity, onRelease } = options;
  const rss = () => process.memoryUsage.rss();
  let baseline = rss();
  let idleTicks = 0;
  let last = performance.eventLoopUtilization();
  let lastActivity = activity?.();
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const utilisation = performance.eventLoopUtilization(now, last).utilization;
    const count = activity?.();
    const idle = count === undefined ? utilisation < IDLE_UTILISATION : count === lastActivity && utilisation < QUIET_UTILISATION;
    last = now;
    lastActivity = count;
    idleTicks = idle ? idleTicks + 1 : 0;
    if (idleTicks < idleSeconds || rss() < baseline + minGrowthBytes) return;
    const release = releaseMemory({ keepCode: true });
    baseline = rss();
    idleTicks = 0;
    // the collection itself is not load: the next tick measures from after it
    last = performance.eventLoopUtilization();
    onRelease(release);
  }, tickMs);
  timer.unref();
  return () => clearInterval(timer);
}
