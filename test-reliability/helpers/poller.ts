import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { call, Stats, type Result } from './http.ts';

interface PollerData {
  base: string;
  path: string;
  intervalMs: number;
}

/**
 * Polls `GET base+path` every `intervalMs` from a worker thread until `stop()`, which resolves to
 * the latencies. The thread has its own event loop: what the test's main thread does meanwhile
 * (building and sending large bodies, reading their answers) does not delay a poll or its timing,
 * so the figures are the service's answer time, not the test client's.
 */
export function pollInThread(base: string, path: string, intervalMs: number): { stop: () => Promise<Stats> } {
  const worker = new Worker(new URL(import.meta.url), { workerData: { base, path, intervalMs } satisfies PollerData });
  const results = new Promise<Result[]>((resolve, reject) => {
    worker.once('message', (r: Result[]) => resolve(r));
    worker.once('error', reject);
  });
  return {
    stop: async () => {
      worker.postMessage('stop');
      const stats = new Stats();
      for (const r of await results) stats.add(r);
      await worker.terminate();
      return stats;
    },
  };
}

if (!isMainThread && parentPort) {
  const port = parentPort;
  const { base, path, intervalMs } = workerData as PollerData;
  let stopped = false;
  port.once('message', () => (stopped = true));
  const results: Result[] = [];
  while (!stopped) {
    const r = await call(base, 'GET', path, { timeoutMs: 10000 });
    results.push({ ...r, body: undefined, headers: {} });
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  port.postMessage(results);
}
