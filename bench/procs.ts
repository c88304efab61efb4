/** Child processes of the bench: the service, the baseline and the load generator. */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LoadJob, LoadResult } from './types.ts';

export interface Proc {
  readonly name: string;
  readonly child: ChildProcess;
  readonly logPath: string;
  readonly exited: Promise<number | null>;
}

/** Starts `node <script>` (this same Node 24 binary) with its output going to a log file. */
export function startNode(opts: { name: string; script: string; env: Record<string, string>; logDir: string; execArgv?: string[] }): Proc {
  const logPath = path.join(opts.logDir, `${opts.name}.log`);
  const out = fs.openSync(logPath, 'a');
  const child = spawn(process.execPath, [...(opts.execArgv ?? []), opts.script], {
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', out, out],
  });
  fs.closeSync(out);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { name: opts.name, child, logPath, exited };
}

/** Polls `ready` until it is true; fails early if the process exits, with the tail of its log. */
export async function waitUntil(proc: Proc, ready: () => Promise<boolean>, timeoutMs = 60_000, intervalMs = 200): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  void proc.exited.then(() => (exited = true));
  while (Date.now() < deadline) {
    if (exited) throw new Error(`${proc.name} exited during start-up:\n${tail(proc.logPath)}`);
    if (await ready()) return;
    await sleep(intervalMs);
  }
  throw new Error(`${proc.name} not ready after ${timeoutMs} ms:\n${tail(proc.logPath)}`);
}

/** Polls `url` until it answers 200. */
export function waitReady(proc: Proc, url: string, timeoutMs = 60_000): Promise<void> {
  return waitUntil(proc, async () => {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      return res.status === 200;
    } catch {
      return false; // not listening yet
    }
  }, timeoutMs);
}

/** One JSON request to a service the bench started: its status and parsed body. */
export async function call(url: string, init: { method?: string; token?: string; body?: unknown }): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, {
    method: init.method ?? 'GET',
    headers: { ...(init.token ? { authorization: `Bearer ${init.token}` } : {}), ...(init.body ? { 'content-type': 'application/json' } : {}) },
    body: init.body ? JSON.stringify(init.body) : undefined,
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

export function tail(file: string, lines = 30): string {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/** SIGTERM, then SIGKILL if the graceful shutdown takes longer than `graceMs`. */
export async function stopProc(proc: Proc, graceMs = 35_000): Promise<void> {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  proc.child.kill('SIGTERM');
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), graceMs);
  await proc.exited;
  clearTimeout(timer);
}

/** The load generator process (bench/load.ts): one request at a time over IPC. */
export class LoadRunner {
  private readonly child: ChildProcess;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (r: LoadResult[]) => void; reject: (e: Error) => void }>();

  constructor(script: string) {
    this.child = fork(script, [], { execPath: process.execPath, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.child.on('message', (msg: { id: number; results?: LoadResult[]; error?: string }) => {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.results) p.resolve(msg.results);
      else p.reject(new Error(`load generator: ${msg.error}`));
    });
    this.child.on('exit', (code) => {
      for (const p of this.pending.values()) p.reject(new Error(`load generator exited (${code})`));
      this.pending.clear();
    });
  }

  run(jobs: LoadJob[]): Promise<LoadResult[]> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.child.send({ id, jobs });
    });
  }

  close(): void {
    if (this.child.connected) this.child.disconnect();
  }
}
