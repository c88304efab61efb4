import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { Agent, request } from 'undici';
import { defer, waitFor } from '../helpers/app.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, alive, freePort, parentOf, SDK_LOAD_PROBE, SDK_LOADED, serverEnv, spawnProcess, start, untilHealthy } from '../helpers/server-process.ts';

describe('the server process', { timeout: 300000 }, () => {
  it('prints the docs URL, loads no tracing SDK, finishes in-flight requests on SIGTERM and exits 0', async (t) => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    // debug: the access log writes "incoming request" for each one, so the test knows when all are in flight
    const proc = start(t, 'src/server.ts', await serverEnv(t, { PORT: String(port), LOG_LEVEL: 'debug' }), SDK_LOAD_PROBE);
    await untilHealthy(base, proc);
    // without OTEL_EXPORTER_OTLP_ENDPOINT the OpenTelemetry SDK is never loaded (tracing costs nothing)
    assert.ok(!proc.stderr().includes(SDK_LOADED), 'the SDK is not loaded');
    // …and one start-up line says tracing is off, and how to turn it on
    const tracing = proc.stdout().split('\n').filter((l) => l.includes('"msg":"tracing '));
    assert.equal(tracing.length, 1);
    assert.match(tracing[0], /"msg":"tracing off: set OTEL_EXPORTER_OTLP_ENDPOINT/);
    assert.match(proc.stdout(), new RegExp(`${base.replace(/[.]/g, '\\.')}/docs`));

    // each login on its own connection: bcrypt at cost 12 keeps every one in flight for a while
    const N = 8;
    const agents = Array.from({ length: N }, () => new Agent({ connections: 1 }));
    t.after(() => Promise.all(agents.map((a) => a.close())));
    let done = 0;
    const logins = agents.map(async (dispatcher) => {
      const res = await request(`${base}/api/v1/auth/login`, {
        method: 'POST',
        dispatcher,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: ADMIN_EMAIL, password: ADMIN_PASSWORD }),
      });
      const body = (await res.body.json()) as { access_token?: string };
      done++;
      return { status: res.statusCode, body, connection: res.headers.connection };
    });
    const settled = Promise.allSettled(logins);
    const arrived = () => proc.stdout().split('\n').filter((l) => l.includes('"incoming request"') && l.includes('/api/v1/auth/login')).length;
    await waitFor(async () => (arrived() === N ? true : undefined), 15000, 5);
    const signalled = Date.now();
    proc.child.kill('SIGTERM');
    const doneAtSignal = done;
    assert.ok(doneAtSignal < N, `requests still in flight at SIGTERM (${doneAtSignal} of ${N} had finished)`);

    const results = await settled;
    for (const r of results) {
      assert.equal(r.status, 'fulfilled', r.status === 'rejected' ? String(r.reason) : '');
      if (r.status === 'fulfilled') {
        assert.equal(r.value.status, 200);
        assert.match(r.value.body.access_token ?? '', /^ey/);
      }
    }
    const exit = await Promise.race([proc.exited, new Promise<undefined>((r) => setTimeout(() => r(undefined), 30000).unref())]);
    assert.ok(exit, 'the process exits within 30 s of SIGTERM');
    assert.deepEqual(exit, { code: 0, signal: null }, proc.stderr());
    // the access lines wait in their buffer for a moment; what waits at exit is written then
    const completed = proc.stdout().split('\n').filter((l) => l.includes('"request completed"') && l.includes('/api/v1/auth/login'));
    assert.equal(completed.length, N, 'every login has its access line');
    t.diagnostic(`exit ${Date.now() - signalled} ms after SIGTERM; ${doneAtSignal} of ${N} logins had finished when it was sent`);
  });
});

const onServer = Boolean(process.env.TEST_DATABASE_URL);

describe('npm start', { timeout: 300000 }, () => {
  it('hands its process over to the service: SIGTERM to npm stops the service and frees the port within 30 s', async (t) => {
    await handsOver(t, ['start'], 'all');
  });

  it('npm run start:api is the same command with ROLE=api, a 16 MiB semi-space (decision 156) and glibc\'s own mmap threshold (decision 160), so the two cannot drift apart', async () => {
    const { scripts } = JSON.parse(await fs.readFile('package.json', 'utf8')) as { scripts: Record<string, string> };
    assert.match(scripts.start, / --max-semi-space-size=4 /);
    assert.match(scripts.start, /:glibc\.malloc\.mmap_threshold=32768 /);
    const api = scripts.start.replace(' --max-semi-space-size=4 ', ' --max-semi-space-size=16 ').replace(':glibc.malloc.mmap_threshold=32768 ', ' ');
    assert.equal(scripts['start:api'], `ROLE=api ${api}`);
  });
});

describe('npm run start:api (a fleet\'s API process)', { timeout: 300000, skip: !onServer && 'needs TEST_DATABASE_URL' }, () => {
  it('starts an API process (ROLE=api) that npm hands over to, so SIGTERM stops it within 30 s', async (t) => {
    await handsOver(t, ['run', 'start:api'], 'api');
  });
});

/** Runs an npm start script as an operator does; the service it starts says `role`, is npm's own child, and stops on SIGTERM to npm. */
async function handsOver(t: TestContext, npmArgs: string[], role: string): Promise<void> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  // npm's shell runs the script of package.json; LOG_LEVEL info for the start-up line naming the role
  const env = { ...(await serverEnv(t, { PORT: String(port), LOG_LEVEL: 'info' })), PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' };
  const proc = spawnProcess(t, 'npm', npmArgs, env);
  const { child, exited } = proc;
  const out = () => proc.stdout() + proc.stderr();
  await untilHealthy(base, proc);
  assert.match(out(), new RegExp(`"msg":"database: [^"]*; role ${role}"`), 'the start-up line names the role');
  // the process that listens: npm's child (the shell) became Node.js, not a grandchild of it
  const servicePid = await listenerPid(port);
  assert.ok(servicePid !== undefined, 'the listening process is found');
  // runs before spawnProcess's kill of npm (defer: last registered first); npm exits once its child has
  defer(t, async () => {
    if (alive(servicePid)) process.kill(servicePid, 'SIGKILL');
  });
  assert.equal(await parentOf(servicePid), child.pid, `the service (pid ${servicePid}) is npm's own child`);

  child.kill('SIGTERM');
  const exit = await Promise.race([exited, new Promise<undefined>((r) => setTimeout(() => r(undefined), 30000).unref())]);
  assert.ok(exit, `npm exits within 30 s of SIGTERM: ${out()}`);
  await waitFor(async () => (alive(servicePid) ? undefined : true), 5000, 50);
  await assert.rejects(request(`${base}/health`), /ECONNREFUSED/, 'nothing listens on the port any more');
}

/** The pid of the process listening on 127.0.0.1:port (Linux: the socket's inode in /proc/net/tcp, then the fd naming it). */
async function listenerPid(port: number): Promise<number | undefined> {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const line = (await fs.readFile('/proc/net/tcp', 'utf8')).split('\n').find((l) => {
    const f = l.trim().split(/\s+/);
    return f[1]?.endsWith(`:${hexPort}`) && f[3] === '0A';
  });
  const inode = line?.trim().split(/\s+/)[9];
  if (!inode) return undefined;
  for (const pid of (await fs.readdir('/proc')).filter((d) => /^\d+$/.test(d))) {
    const fds = await fs.readdir(`/proc/${pid}/fd`).catch(() => []);
    for (const fd of fds) {
      if ((await fs.readlink(`/proc/${pid}/fd/${fd}`).catch(() => '')) === `socket:[${inode}]`) return Number(pid);
    }
  }
  return undefined;
}

describe('npm run migrate (src/db/migrate-cli.ts)', { timeout: 300000 }, () => {
  it('applies every migration on a fresh database, then reports it up to date', async (t) => {
    const env = await serverEnv(t, {}, { emptyDatabase: true });
    const migrations = (await fs.readdir('src/db/migrations')).filter((f) => f.endsWith('.ts')).map((f) => f.replace(/\.ts$/, '')).sort();

    const first = start(t, 'src/db/migrate-cli.ts', env);
    assert.deepEqual(await first.exited, { code: 0, signal: null }, first.stderr());
    const line = first.stdout().trim().split('\n').at(-1) ?? '';
    assert.match(line, /^applied: /);
    assert.deepEqual(line.replace(/^applied: /, '').split(', '), migrations);

    const second = start(t, 'src/db/migrate-cli.ts', env);
    assert.deepEqual(await second.exited, { code: 0, signal: null }, second.stderr());
    assert.equal(second.stdout().trim(), 'database is up to date');

    if (env.DATABASE_URL) {
      const db = new pg.Client({ connectionString: env.DATABASE_URL });
      await db.connect();
      defer(t, () => db.end());
      const { rows } = await db.query<{ name: string }>('SELECT name FROM kysely_migration ORDER BY name');
      assert.deepEqual(rows.map((r) => r.name), migrations);
      const users = await db.query("SELECT to_regclass('public.users') AS t");
      assert.equal(users.rows[0].t, 'users');
    }
  });
});

describe('a wrong setting stops start-up with one line naming it', { timeout: 300000 }, () => {
  for (const script of ['src/server.ts', 'src/db/migrate-cli.ts']) {
    it(script, async (t) => {
      const env = await serverEnv(t);
      const proc = start(t, script, { ...env, LOG_LEVEL: 'verbose' });
      assert.deepEqual(await proc.exited, { code: 1, signal: null });
      assert.equal(proc.stderr().trim(), 'configuration error: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"');
    });
  }
});

describe('ROLE=worker and ROLE=api as separate processes (PostgreSQL)', { skip: !process.env.TEST_DATABASE_URL && 'needs TEST_DATABASE_URL', timeout: 300000 }, () => {
  it('the worker does not listen on PORT and runs the jobs the API process enqueues', async (t) => {
    const workerPort = await freePort();
    const apiPort = await freePort();
    const api = `http://127.0.0.1:${apiPort}`;
    const apiEnv = await serverEnv(t, { PORT: String(apiPort), ROLE: 'api', BCRYPT_ROUNDS: '4', SEED_DEMO_CATALOG: 'true' });
    const apiProc = start(t, 'src/server.ts', apiEnv);
    await untilHealthy(api, apiProc);
    // only a process that fetches jobs listens to the job queue's channel (src/jobs/queue.ts)
    const db = new pg.Client({ connectionString: apiEnv.DATABASE_URL });
    await db.connect();
    // the test database is dropped (its sessions ended) when the test ends
    db.on('error', () => {});
    const listeners = async () =>
      (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN %pgboss%'`)).rows[0].n;
    assert.equal(await listeners(), 0, 'the API process does not listen for jobs');

    // the worker: the same database, its own data directory (its outbox is where its mail lands)
    const metricsPort = await freePort();
    const workerEnv = await serverEnv(t, { PORT: String(workerPort), METRICS_PORT: String(metricsPort), ROLE: 'worker', LOG_LEVEL: 'info', BCRYPT_ROUNDS: '4' });
    workerEnv.DATABASE_URL = apiEnv.DATABASE_URL;
    const worker = start(t, 'src/server.ts', workerEnv);
    await waitFor(async () => {
      if (worker.child.exitCode !== null) throw new Error(`worker exited: ${worker.stderr()}`);
      return worker.stdout().includes('worker started') ? true : undefined;
    }, 30000, 50);
    await assert.rejects(request(`http://127.0.0.1:${workerPort}/health`), /ECONNREFUSED/, 'the worker does not listen on PORT');
    // on METRICS_PORT: its operations routes, nothing else
    const workerOps = `http://127.0.0.1:${metricsPort}`;
    assert.equal((await request(`${workerOps}/ready`)).statusCode, 200);
    const notServed = await request(`${workerOps}/api/v1/auth/me`);
    assert.equal(notServed.statusCode, 404);
    assert.equal(((await notServed.body.json()) as { error_code: string }).error_code, 'NOT_FOUND');
    assert.equal(await listeners(), 1, "the worker's job queue listens");
    await db.end();

    // an admin creates a user through the API process: the welcome e-mail job runs in the worker
    const login = await request(`${api}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: ADMIN_EMAIL, password: ADMIN_PASSWORD }),
    });
    assert.equal(login.statusCode, 200);
    const { access_token: token } = (await login.body.json()) as { access_token: string };
    const created = await request(`${api}/api/v1/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ email: 'split-roles@example.com', full_name: 'Split Roles', password: 'password123' }),
    });
    assert.equal(created.statusCode, 201, await created.body.text());
    const outbox = path.join(workerEnv.DATA_DIR, 'outbox');
    const mail = await waitFor(async () => {
      const files = await fs.readdir(outbox).catch(() => []);
      return files.length > 0 ? files : undefined;
    }, 30000, 100);
    assert.equal(mail.length, 1);
    assert.match(await fs.readFile(path.join(outbox, mail[0]), 'utf8'), /split-roles@example\.com/);
    const apiOutbox = await fs.readdir(path.join(apiEnv.DATA_DIR, 'outbox')).catch(() => []);
    assert.deepEqual(apiOutbox, [], 'the API process (ROLE=api) runs no jobs');

    // an order placed through the API process is processed, and counted, by the worker
    const placed = await request(`${api}/api/v1/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ items: [{ product_id: 1, quantity: 1 }], shipping_address: '1 Split Street' }),
    });
    assert.equal(placed.statusCode, 201, await placed.body.text());
    const processedByWorker = /order_status_transitions_total\{status="(completed|failed)"\} 1/;
    await waitFor(async () => (processedByWorker.test(await (await request(`${workerOps}/metrics`)).body.text()) ? true : undefined), 30000, 100);

    worker.child.kill('SIGTERM');
    apiProc.child.kill('SIGTERM');
    assert.deepEqual(await worker.exited, { code: 0, signal: null }, worker.stderr());
    assert.deepEqual(await apiProc.exited, { code: 0, signal: null }, apiProc.stderr());
  });
});
