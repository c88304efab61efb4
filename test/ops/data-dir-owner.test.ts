import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import net from 'node:net';
import { request } from 'undici';
import { defer } from '../helpers/app.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, freePort, serverEnv, start, untilHealthy, type Proc } from '../helpers/server-process.ts';

const onServer = Boolean(process.env.TEST_DATABASE_URL);

async function call(base: string, method: string, url: string, token?: string, body?: unknown) {
  const res = await request(`${base}${url}`, {
    method: method as 'GET',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
}

async function stopped(proc: Proc) {
  proc.child.kill('SIGTERM');
  return proc.exited;
}

describe('one process per embedded data directory (npm start twice)', { skip: onServer && 'embedded database only', timeout: 300000 }, () => {
  it('refuses a second process on the same DATA_DIR with one line naming the holder, and loses no write', async (t) => {
    const env = await serverEnv(t);
    const [portA, portB] = [await freePort(), await freePort()];
    const baseA = `http://127.0.0.1:${portA}`;
    const a = start(t, 'src/server.ts', { ...env, PORT: String(portA) });
    await untilHealthy(baseA, a);

    const b = start(t, 'src/server.ts', { ...env, PORT: String(portB) });
    const exit = await b.exited;
    assert.equal(exit.code, 1, b.stdout());
    const lines = b.stderr().trim().split('\n');
    assert.equal(lines.length, 1, b.stderr());
    assert.equal(lines[0], `DATA_DIR ${env.DATA_DIR} is in use by process ${a.child.pid} (running since ${lines[0].match(/running since ([^)]+)\)/)?.[1]}): stop it first, or give this one another DATA_DIR`);
    assert.ok(!b.stdout().includes('migrations'), 'the second process opened no database');

    // the first goes on, and what it acknowledged is there after a restart
    const login = await call(baseA, 'POST', '/api/v1/auth/login', undefined, { username: ADMIN_EMAIL, password: ADMIN_PASSWORD });
    const token = login.body.access_token as string;
    const item = await call(baseA, 'POST', '/api/v1/items', token, { name: 'kept', price: 1.5 });
    assert.equal(item.status, 201);
    assert.equal((await stopped(a)).code, 0);
    const again = start(t, 'src/server.ts', { ...env, PORT: String(portB) });
    await untilHealthy(`http://127.0.0.1:${portB}`, again);
    const relogin = await call(`http://127.0.0.1:${portB}`, 'POST', '/api/v1/auth/login', undefined, { username: ADMIN_EMAIL, password: ADMIN_PASSWORD });
    const read = await call(`http://127.0.0.1:${portB}`, 'GET', `/api/v1/items/${item.body.id as number}`, relogin.body.access_token as string);
    assert.equal(read.status, 200);
    assert.equal(read.body.name, 'kept');

    // npm run migrate honours the same lock
    const migrate = start(t, 'src/db/migrate-cli.ts', env);
    assert.equal((await migrate.exited).code, 1);
    assert.match(migrate.stderr().trim(), new RegExp(`^DATA_DIR .* is in use by process ${again.child.pid} `));
    await stopped(again);
  });

  it('starts whoever squats the abstract socket name the lock once used, and takes the directory over at once after a SIGKILL', async (t) => {
    const env = await serverEnv(t);
    await fs.mkdir(env.DATA_DIR, { recursive: true });
    if (process.platform === 'linux') {
      // what any local user could do to the lock of earlier releases: listen first, answer with a forged holder
      const key = crypto.createHash('sha256').update(await fs.realpath(env.DATA_DIR)).digest('hex').slice(0, 24);
      const squatter = net.createServer((socket) => socket.end(JSON.stringify({ pid: 1, startedAt: 'forged' })));
      await new Promise<void>((resolve) => squatter.listen(`\0order-account-service-${key}`, resolve));
      defer(t, () => new Promise((resolve) => squatter.close(resolve)));
    }
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const first = start(t, 'src/server.ts', { ...env, PORT: String(port) });
    await untilHealthy(base, first);
    first.child.kill('SIGKILL');
    assert.equal((await first.exited).signal, 'SIGKILL');
    const next = start(t, 'src/server.ts', { ...env, PORT: String(port) });
    await untilHealthy(base, next);
    assert.ok(!next.stderr().includes('in use'), next.stderr());
    assert.equal((await stopped(next)).code, 0);
  });

  it('names a busy port before opening the database', async (t) => {
    const port = await freePort();
    const first = start(t, 'src/server.ts', { ...(await serverEnv(t)), PORT: String(port) });
    await untilHealthy(`http://127.0.0.1:${port}`, first);
    const second = start(t, 'src/server.ts', { ...(await serverEnv(t)), PORT: String(port) });
    assert.equal((await second.exited).code, 1);
    assert.equal(second.stderr().trim(), `port ${port} is already in use (on 127.0.0.1): stop what listens there, or set PORT`);
    await stopped(first);
  });
});
