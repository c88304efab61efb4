import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { defer, waitFor } from '../helpers/app.ts';

const NODE = path.resolve('node_modules/.bin/node');

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

describe('the server process', () => {
  it('prints where the docs are, drains in-flight requests on SIGTERM and exits 0', async (t) => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'oas-proc-'));
    defer(t, () => fs.rm(dataDir, { recursive: true, force: true }));
    const port = await freePort();
    const child = spawn(NODE, ['src/server.ts'], {
      env: {
        ...process.env,
        PORT: String(port),
        HOST: '127.0.0.1',
        DATA_DIR: dataDir,
        DATABASE_URL: '',
        REDIS_URL: '',
        LOG_LEVEL: 'info',
        BCRYPT_ROUNDS: '12',
        ADMIN_EMAIL: 'ops-admin@example.com',
        ADMIN_PASSWORD: 'ops-admin-password',
        RATE_LIMIT_ANONYMOUS: '1000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stdout += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    defer(t, async () => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    const base = `http://127.0.0.1:${port}`;
    await waitFor(async () => {
      try {
        return (await fetch(`${base}/health`)).ok ? true : undefined;
      } catch {
        return undefined;
      }
    }, 60000, 200);
    assert.match(stdout, new RegExp(`http://127\\.0\\.0\\.1:${port}/docs`), 'start-up names the docs address');

    // logins at bcrypt cost 12 take a few hundred ms each: SIGTERM arrives while they are running
    const logins = Array.from({ length: 6 }, () =>
      fetch(`${base}/api/v1/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'ops-admin@example.com', password: 'ops-admin-password' }),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as { access_token?: string } })),
    );
    // SIGTERM once the server has received all six (its request log), so each is truly in flight
    const received = () => stdout.split('\n').filter((l) => l.includes('incoming request') && l.includes('/api/v1/auth/login')).length;
    await waitFor(async () => (received() >= 6 ? true : undefined), 20000, 5);
    child.kill('SIGTERM');
    const results = await Promise.all(logins);
    for (const r of results) {
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.ok(r.body.access_token);
    }
    const code = await Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 30000))]);
    assert.equal(code, 0, `exit code; output:\n${stdout}`);
  });

  it('npm run migrate applies the migrations to a PostgreSQL database, then reports it up to date', { skip: !process.env.TEST_DATABASE_URL }, async (t) => {
    const server = process.env.TEST_DATABASE_URL as string;
    const name = `oas_migrate_${crypto.randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: server });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    defer(t, async () => {
      const c = new pg.Client({ connectionString: server });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    });
    const url = new URL(server);
    url.pathname = `/${name}`;
    const run = () => spawnSync(NODE, ['src/db/migrate-cli.ts'], { env: { ...process.env, DATABASE_URL: url.toString() }, encoding: 'utf8' });
    const first = run();
    assert.equal(first.status, 0, first.stderr);
    assert.match(first.stdout, /applied: .*20261121000000_initial/);
    const second = run();
    assert.equal(second.status, 0, second.stderr);
    assert.match(second.stdout, /up to date/);
    const c = new pg.Client({ connectionString: url.toString() });
    await c.connect();
    const { rows } = await c.query<{ n: string }>(`SELECT count(*) AS n FROM information_schema.tables WHERE table_name IN ('users', 'orders', 'items')`);
    await c.end();
    assert.equal(Number(rows[0].n), 3);
  });
});
