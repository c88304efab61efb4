import { Agent, request } from 'undici';
import { ADMIN_EMAIL, ADMIN_PASSWORD } from './service.ts';

/** Keep-alive connections to the service processes, bounded per origin. */
export const agent = new Agent({ connections: 64, keepAliveTimeout: 10000, pipelining: 1 });

export interface Result {
  status: number;
  /** parsed JSON when the body is JSON, else the text */
  body: unknown;
  headers: Record<string, string | string[] | undefined>;
  ms: number;
  /** network error code (status 0): ECONNREFUSED, ECONNRESET, UND_ERR_HEADERS_TIMEOUT … */
  error?: string;
}

export interface CallOptions {
  token?: string;
  body?: unknown;
  /** a raw body (sent as is, with the given headers) */
  raw?: string | Buffer;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

/** One HTTP request that never throws: a network failure is status 0 with its error code. */
export async function call(base: string, method: string, path: string, opts: CallOptions = {}): Promise<Result> {
  const started = performance.now();
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let payload: string | Buffer | undefined = opts.raw;
  if (opts.body !== undefined) {
    payload = JSON.stringify(opts.body);
    headers['content-type'] = 'application/json';
  }
  const timeout = opts.timeoutMs ?? 20000;
  try {
    const res = await request(`${base}${path}`, {
      method: method as 'GET',
      headers,
      body: payload,
      dispatcher: agent,
      headersTimeout: timeout,
      bodyTimeout: timeout,
    });
    const text = await res.body.text();
    let body: unknown = text;
    if (String(res.headers['content-type'] ?? '').includes('json') && text.length > 0) {
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
    }
    return { status: res.statusCode, body, headers: res.headers, ms: performance.now() - started };
  } catch (err) {
    const e = err as { code?: string; cause?: { code?: string }; message?: string };
    return { status: 0, body: undefined, headers: {}, ms: performance.now() - started, error: e.code ?? e.cause?.code ?? e.message ?? 'error' };
  }
}

export async function login(base: string, email: string, password: string): Promise<{ access: string; refresh: string }> {
  const res = await call(base, 'POST', '/api/v1/auth/login', { body: { username: email, password } });
  if (res.status !== 200) throw new Error(`login of ${email} failed: ${res.status} ${JSON.stringify(res.body)} ${res.error ?? ''}`);
  const b = res.body as { access_token: string; refresh_token: string };
  return { access: b.access_token, refresh: b.refresh_token };
}

export function adminLogin(base: string): Promise<{ access: string; refresh: string }> {
  return login(base, ADMIN_EMAIL, ADMIN_PASSWORD);
}

export const PASSWORD = 'reliability-user-pass';

/** Creates users through the admin API and signs each in. */
export async function createUsers(base: string, adminToken: string, count: number, tag: string) {
  const users: { id: number; email: string; token: string; refresh: string }[] = [];
  for (let i = 0; i < count; i++) {
    const email = `${tag}-${i}-${Date.now().toString(36)}@example.com`;
    const res = await call(base, 'POST', '/api/v1/users', { token: adminToken, body: { email, full_name: `${tag} user ${i}`, password: PASSWORD } });
    if (res.status !== 201) throw new Error(`user creation failed: ${res.status} ${JSON.stringify(res.body)}`);
    const t = await login(base, email, PASSWORD);
    users.push({ id: (res.body as { id: number }).id, email, token: t.access, refresh: t.refresh });
  }
  return users;
}

/** Latency and status figures of a set of requests. */
export class Stats {
  readonly byStatus = new Map<string, number>();
  private readonly latencies: number[] = [];

  add(r: Result): void {
    const key = r.status === 0 ? `net:${r.error}` : String(r.status);
    this.byStatus.set(key, (this.byStatus.get(key) ?? 0) + 1);
    this.latencies.push(r.ms);
  }

  get count(): number {
    return this.latencies.length;
  }

  count5xx(): number {
    let n = 0;
    for (const [k, v] of this.byStatus) if (/^5\d\d$/.test(k)) n += v;
    return n;
  }

  countNet(): number {
    let n = 0;
    for (const [k, v] of this.byStatus) if (k.startsWith('net:')) n += v;
    return n;
  }

  percentile(p: number): number {
    if (this.latencies.length === 0) return 0;
    const sorted = [...this.latencies].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
  }

  max(): number {
    return this.latencies.reduce((m, v) => Math.max(m, v), 0);
  }

  statuses(): string {
    return [...this.byStatus.entries()]
      .sort()
      .map(([k, v]) => `${k}×${v}`)
      .join(' ');
  }
}

/**
 * Runs `task` with at most `concurrency` in flight until `stop()` says so (checked before each
 * start) or `maxTasks` have started. Bounded in count and time by construction.
 */
export async function runBounded(
  concurrency: number,
  opts: { maxTasks: number; until?: () => boolean },
  task: (index: number) => Promise<void>,
): Promise<number> {
  let started = 0;
  const lane = async () => {
    while (started < opts.maxTasks && !(opts.until?.() ?? false)) {
      const i = started++;
      await task(i);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  return started;
}
