/** Messages between the orchestrator (run.ts and its phases) and the load generator process (load.ts). */

export interface RequestShape {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export type Pattern =
  /** GET a random path of a random entry (a user's token and the paths that user may read) */
  | { kind: 'get'; entries: { token?: string; paths: string[] }[] }
  | { kind: 'post-order'; path: string; tokens: string[]; productIds: number[] }
  | {
      kind: 'webhook';
      path: string;
      secret: string;
      /** the sample payload; id, email and line_items are replaced per request */
      template: Record<string, unknown>;
      /** unique per run: platform order ids and webhook ids never repeat */
      idPrefix: string;
      emails: string[];
      skus: string[];
    }
  | { kind: 'login'; path: string; credentials: { username: string; password: string }[] }
  | { kind: 'mix'; parts: { weight: number; pattern: Pattern }[] };

export interface LoadJob {
  name: string;
  /** base URL (scheme, host, port) */
  url: string;
  connections: number;
  durationSec: number;
  /** run first, not recorded (JIT, pools, caches) */
  warmupSec: number;
  pattern: Pattern;
  /**
   * Open loop: requests per second at fixed intervals, on up to `connections` connections, each
   * latency counted from when its request was due (so a request waiting for a free connection is
   * counted as waiting). Unset: autocannon's closed loop (each connection sends as soon as it has
   * its answer).
   */
  rate?: number;
  /** the result carries every latency (`LoadResult.samples`), so that two runs can be joined (`joinResults`) */
  keepSamples?: boolean;
}

export interface LoadSummary {
  p50: number;
  p95: number;
  p99: number;
  max: number;
  mean: number;
}

export interface LoadResult {
  name: string;
  connections: number;
  durationSec: number;
  requests: number;
  rps: number;
  /** 2xx responses per second */
  okRps: number;
  /** milliseconds */
  latency: LoadSummary;
  statuses: Record<string, number>;
  errors: number;
  timeouts: number;
  /** each response's latency, ms, when the job asked for them (`LoadJob.keepSamples`) */
  samples?: number[];
}
