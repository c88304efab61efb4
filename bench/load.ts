/**
 * The load generator, run as its own process (forked by LoadRunner in bench/procs.ts, with an IPC
 * channel) so that building requests and parsing responses never shares an event loop with the
 * orchestrator.
 *
 * It receives { id, jobs: LoadJob[] }, runs the jobs at the same time (several jobs = concurrent
 * workloads, e.g. logins alongside /auth/me), and answers { id, results: LoadResult[] }.
 * Latencies are recorded per response (autocannon's own summary has no p95).
 */
import crypto from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { Pool } from 'undici';
import { summarise } from './stats.ts';
import type { LoadJob, LoadResult, Pattern, RequestShape } from './types.ts';

function pick<T>(list: readonly T[]): T {
  return list[Math.floor(Math.random() * list.length)];
}

let sequence = 0;

/** A function producing the next request of a pattern: each request is built fresh (random user, id). */
function generator(pattern: Pattern): () => RequestShape {
  switch (pattern.kind) {
    case 'get':
      return () => {
        const entry = pick(pattern.entries);
        const headers: Record<string, string> = entry.token ? { authorization: `Bearer ${entry.token}` } : {};
        return { method: 'GET', path: pick(entry.paths), headers };
      };
    case 'post-order':
      return () => {
        const lines = 1 + Math.floor(Math.random() * 3);
        const ids = new Set<number>();
        while (ids.size < lines) ids.add(pick(pattern.productIds));
        const body = JSON.stringify({
          items: [...ids].map((product_id) => ({ product_id, quantity: 1 + Math.floor(Math.random() * 3) })),
          shipping_address: '12 Harbour Street, Portland ME 04101',
        });
        return {
          method: 'POST',
          path: pattern.path,
          headers: { authorization: `Bearer ${pick(pattern.tokens)}`, 'content-type': 'application/json' },
          body,
        };
      };
    case 'webhook':
      return () => {
        const n = ++sequence;
        const payload = {
          ...pattern.template,
          id: `${pattern.idPrefix}${n}`,
          email: pick(pattern.emails),
          line_items: [
            { id: n * 10 + 1, sku: pick(pattern.skus), title: 'Bench item', quantity: 1 + (n % 3), price: '12.50' },
            { id: n * 10 + 2, sku: pick(pattern.skus), title: 'Bench item', quantity: 1, price: '32.50' },
          ],
        };
        delete (payload as { customer?: unknown }).customer;
        const body = JSON.stringify(payload);
        const hmac = crypto.createHmac('sha256', pattern.secret).update(body).digest('base64');
        return {
          method: 'POST',
          path: pattern.path,
          headers: {
            'content-type': 'application/json',
            'x-shopify-hmac-sha256': hmac,
            'x-shopify-webhook-id': `${pattern.idPrefix}wh-${n}`,
            'x-shopify-topic': 'orders/create',
            'x-shopify-shop-domain': 'bench.myshopify.com',
            'x-shopify-triggered-at': new Date().toISOString(),
          },
          body,
        };
      };
    case 'login':
      return () => {
        const c = pick(pattern.credentials);
        return {
          method: 'POST',
          path: pattern.path,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ username: c.username, password: c.password }),
        };
      };
    case 'mix': {
      const parts = pattern.parts.map((p) => ({ weight: p.weight, next: generator(p.pattern) }));
      const total = parts.reduce((s, p) => s + p.weight, 0);
      return () => {
        let r = Math.random() * total;
        for (const p of parts) {
          r -= p.weight;
          if (r < 0) return p.next();
        }
        return parts[parts.length - 1].next();
      };
    }
  }
}

async function runOnce(job: LoadJob, durationSec: number, record: boolean): Promise<LoadResult> {
  const next = generator(job.pattern);
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const url = new URL(job.url);
  const instance = autocannon({
    url: job.url,
    connections: job.connections,
    duration: durationSec,
    // every request differs (user, id, body), so each is built by setupRequest
    requests: [
      {
        setupRequest: (req: Record<string, unknown>) => {
          const r = next();
          return { ...req, method: r.method, path: r.path, headers: { ...r.headers, host: url.host }, body: r.body };
        },
      },
    ],
    timeout: 10,
  } as autocannon.Options);
  instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
    if (!record) return;
    latencies.push(responseTime);
    statuses[statusCode] = (statuses[statusCode] ?? 0) + 1;
  });
  const done = await instance;
  // autocannon stops at its first one-second sample after the duration: a run of 1.5 s (half of a
  // quick run's 3 s, the baseline's share beside each read) sends requests for 2 s. The rates are
  // taken over the time it ran.
  return result(job, done.duration > 0 ? done.duration : durationSec, latencies, statuses, done.errors, done.timeouts);
}

function result(job: LoadJob, durationSec: number, latencies: number[], statuses: Record<string, number>, errors: number, timeouts: number): LoadResult {
  const ok = Object.entries(statuses)
    .filter(([code]) => code.startsWith('2'))
    .reduce((s, [, n]) => s + n, 0);
  return {
    name: job.name,
    connections: job.connections,
    durationSec,
    requests: latencies.length,
    rps: latencies.length / durationSec,
    okRps: ok / durationSec,
    latency: summarise(latencies),
    statuses,
    errors,
    timeouts,
    ...(job.keepSamples ? { samples: latencies } : {}),
  };
}

/** The open loop of `job.rate` (see LoadJob.rate), like wrk2's constant throughput. */
async function runPaced(job: LoadJob, durationSec: number, record: boolean): Promise<LoadResult> {
  const rate = job.rate ?? 1;
  const next = generator(job.pattern);
  const pool = new Pool(job.url, { connections: job.connections, headersTimeout: 10_000, bodyTimeout: 10_000 });
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let errors = 0;
  let timeouts = 0;
  const sent: Promise<void>[] = [];
  const start = performance.now();
  for (let i = 0; i < Math.round(durationSec * rate); i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const r = next();
    sent.push(
      pool.request({ method: r.method, path: r.path, headers: r.headers, body: r.body }).then(
        async (res) => {
          await res.body.dump();
          if (!record) return;
          latencies.push(performance.now() - due);
          statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
        },
        (err: unknown) => {
          if (!record) return;
          if ((err as { code?: string }).code?.includes('TIMEOUT')) timeouts++;
          else errors++;
        },
      ),
    );
  }
  await Promise.all(sent);
  await pool.close();
  return result(job, durationSec, latencies, statuses, errors, timeouts);
}

async function runJob(job: LoadJob): Promise<LoadResult> {
  if (job.rate !== undefined) {
    if (job.warmupSec > 0) await runPaced(job, job.warmupSec, false);
    return runPaced(job, job.durationSec, true);
  }
  if (job.warmupSec > 0) await runOnce(job, job.warmupSec, false);
  return runOnce(job, job.durationSec, true);
}

interface Request {
  id: number;
  jobs: LoadJob[];
}

process.on('message', (msg: Request) => {
  Promise.all(msg.jobs.map(runJob)).then(
    (results) => process.send?.({ id: msg.id, results }),
    (err: unknown) => process.send?.({ id: msg.id, error: err instanceof Error ? err.stack : String(err) }),
  );
});
process.on('disconnect', () => process.exit(0));
