import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request } from 'undici';
import { waitFor } from '../helpers/app.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, alive, childrenOf, freePort, serverEnv, start, untilHealthy, type Proc } from '../helpers/server-process.ts';

/**
 * WEB_CONCURRENCY=2 (src/cluster.ts) as an operator runs it: `node src/server.ts` becomes a
 * supervisor of two API processes sharing the port and one job worker. Which process served a
 * request is read from the access log: each line carries the process id (pino's `pid`) and the
 * request's id (the X-Request-Id the test sends).
 */
describe('WEB_CONCURRENCY=2 (PostgreSQL)', { skip: !process.env.TEST_DATABASE_URL && 'needs TEST_DATABASE_URL: the embedded database serves one process', timeout: 120000 }, () => {
  it('two API processes serve requests, a user change made through one is seen by the other, SIGTERM stops every process', async (t) => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    // a cached user row outlives the test: only the change feed (NOTIFY) can refresh it; the test's
    // requests all come from one address, which the per-IP limit would stop
    const env = await serverEnv(t, {
      PORT: String(port),
      WEB_CONCURRENCY: '2',
      LOG_LEVEL: 'info',
      BCRYPT_ROUNDS: '4',
      USER_CACHE_TTL_SECONDS: '3600',
      RATE_LIMIT_ANONYMOUS: '100000',
      RATE_LIMIT_AUTHENTICATED: '100000',
    });
    const proc = start(t, 'src/server.ts', env);
    await untilHealthy(base, proc);
    const supervisor = proc.child.pid!;
    await waitFor(async () => (proc.stderr().includes(`cluster: supervisor ${supervisor} runs 2 API processes and 1 job worker process`) ? true : undefined), 60000);
    const children = await childrenOf(supervisor);
    assert.equal(children.length, 3, `two API processes and a worker: ${children.join(', ')}`);
    // the second API process is forked once the first listens: each says so when it listens
    const api = await waitFor(async () => {
      const pids = new Set(logLines(proc).filter((l) => l.msg?.startsWith('API at ')).map((l) => l.pid));
      return pids.size === 2 ? [...pids] : undefined;
    }, 60000);
    assert.ok(api.every((pid) => children.includes(pid!)), `the API processes ${api.join(', ')} are the supervisor's children ${children.join(', ')}`);

    let n = 0;
    /** One request on a connection of its own (the supervisor hands each new connection to the next API process). */
    const call = async (method: 'GET' | 'POST' | 'PATCH', path: string, token?: string, body?: object) => {
      const id = `wc-${process.pid}-${++n}`;
      const dispatcher = new Agent({ connections: 1 });
      try {
        const res = await request(`${base}${path}`, {
          method,
          dispatcher,
          headers: { 'x-request-id': id, ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
          body: body ? JSON.stringify(body) : undefined,
        });
        const text = await res.body.text();
        return { status: res.statusCode, json: () => JSON.parse(text) as Record<string, unknown>, text, pid: await servedBy(proc, id) };
      } finally {
        await dispatcher.close();
      }
    };

    const adminLogin = await call('POST', '/api/v1/auth/login', undefined, { username: ADMIN_EMAIL, password: ADMIN_PASSWORD });
    assert.equal(adminLogin.status, 200, adminLogin.text);
    const admin = adminLogin.json().access_token as string;
    const created = await call('POST', '/api/v1/users', admin, { email: 'web-concurrency@example.com', full_name: 'Before', password: 'web-concurrency-1' });
    assert.equal(created.status, 201, created.text);
    const userId = created.json().id as number;
    const userLogin = await call('POST', '/api/v1/auth/login', undefined, { username: 'web-concurrency@example.com', password: 'web-concurrency-1' });
    assert.equal(userLogin.status, 200, userLogin.text);
    const user = userLogin.json().access_token as string;

    // the user's requests until both API processes have served one (and so cached the user's row)
    const servedMe = new Set<number>();
    await waitFor(async () => {
      const me = await call('GET', '/api/v1/auth/me', user);
      assert.equal(me.status, 200, me.text);
      assert.equal(me.json().full_name, 'Before');
      servedMe.add(me.pid);
      return servedMe.size === 2 ? true : undefined;
    }, 30000);
    assert.deepEqual([...servedMe].sort(), [...api].sort());

    // a change through one process…
    const patched = await call('PATCH', `/api/v1/users/${userId}`, admin, { full_name: 'After' });
    assert.equal(patched.status, 200, patched.text);
    assert.ok(api.includes(patched.pid));
    const other = api.find((pid) => pid !== patched.pid)!;
    // …is what the other process answers with, once its cache heard of it
    await waitFor(async () => {
      const me = await call('GET', '/api/v1/auth/me', user);
      assert.equal(me.status, 200, me.text);
      return me.pid === other && me.json().full_name === 'After' ? true : undefined;
    }, 30000);

    // SIGTERM to the supervisor stops every process, and the supervisor exits 0
    proc.child.kill('SIGTERM');
    assert.deepEqual(await proc.exited, { code: 0, signal: null }, proc.stderr());
    await waitFor(async () => (children.every((pid) => !alive(pid)) ? true : undefined), 30000);
  });
});

/** The processes' JSON log lines (stdout). */
function logLines(proc: Proc): { msg?: string; pid?: number; reqId?: string }[] {
  return proc
    .stdout()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg?: string; pid?: number; reqId?: string });
}

/** The pid of the process whose access log line is about request `id`. */
function servedBy(proc: Proc, id: string): Promise<number> {
  return waitFor(async () => logLines(proc).find((l) => l.reqId === id && l.msg === 'request completed')?.pid, 15000, 20);
}
