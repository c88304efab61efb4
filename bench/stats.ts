import type { LoadResult, LoadSummary } from './types.ts';

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: Float64Array | number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx];
}

export function summarise(samples: number[]): LoadSummary {
  const sorted = Float64Array.from(samples).sort();
  let sum = 0;
  for (const v of samples) sum += v;
  return {
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted.length ? sorted[sorted.length - 1] : NaN,
    mean: sorted.length ? sum / sorted.length : NaN,
  };
}

/**
 * Two runs of the same job as one: their requests over their time together, and the percentiles of
 * their latencies together (both runs need `LoadJob.keepSamples`). The samples are not kept.
 */
export function joinResults(a: LoadResult, b: LoadResult): LoadResult {
  if (!a.samples || !b.samples) throw new Error(`joinResults: ${a.name} was run without its samples`);
  const durationSec = a.durationSec + b.durationSec;
  const requests = a.requests + b.requests;
  const statuses = { ...a.statuses };
  for (const [code, n] of Object.entries(b.statuses)) statuses[code] = (statuses[code] ?? 0) + n;
  return {
    name: a.name,
    connections: a.connections,
    durationSec,
    requests,
    rps: requests / durationSec,
    okRps: (a.okRps * a.durationSec + b.okRps * b.durationSec) / durationSec,
    latency: summarise([...a.samples, ...b.samples]),
    statuses,
    errors: a.errors + b.errors,
    timeouts: a.timeouts + b.timeouts,
  };
}

/** The slope of the least-squares line through `samples` (t in ms), per minute; NaN under two samples. */
export function slopePerMinute(samples: { t: number; mib: number }[]): number {
  if (samples.length < 2) return NaN;
  const tMean = samples.reduce((s, p) => s + p.t, 0) / samples.length;
  const yMean = samples.reduce((s, p) => s + p.mib, 0) / samples.length;
  let num = 0;
  let den = 0;
  for (const p of samples) {
    num += (p.t - tMean) * (p.mib - yMean);
    den += (p.t - tMean) ** 2;
  }
  return den > 0 ? (num / den) * 60_000 : NaN;
}
