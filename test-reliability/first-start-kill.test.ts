import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { UNLIMITED } from './helpers/deployment.ts';
import { until } from './helpers/infra.ts';
import { adminLogin, call } from './helpers/http.ts';
import { printTable, round } from './helpers/report.ts';
import { jwtPrivateKey, ServiceProcess } from './helpers/service.ts';

/**
 * Scenario 11 — the very first start on a fresh embedded data directory is SIGKILLed while PGlite
 * creates the database (initdb, its files being written), just as it is complete (`PG_VERSION`
 * written), or while the migrations and the first seeds run; then it is started again. Each time the
 * second start must succeed and serve: sign-in, a product created, an order placed and completed.
 */
interface Progress {
  /** files under pgdata */
  files: number;
  /** ms since PG_VERSION appeared (initdb complete), undefined before */
  sinceInitdb: number | undefined;
  /** the first start's output so far */
  output: string;
}

interface KillPoint {
  name: string;
  /** true once the first start has reached the moment to kill it */
  reached: (p: Progress) => boolean;
}

const pgdata = (dataDir: string) => path.join(dataDir, 'pgdata');
const fileCount = (dir: string): number =>
  fs.existsSync(dir) ? fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length : 0;

const KILL_POINTS: KillPoint[] = [
  { name: 'initdb writing its files', reached: (p) => p.files >= 50 && p.sinceInitdb === undefined },
  { name: 'initdb just complete (PG_VERSION written)', reached: (p) => p.sinceInitdb !== undefined },
  // the database starting and the migrations running: no line yet, a second after initdb
  { name: 'the migrations running', reached: (p) => (p.sinceInitdb ?? 0) >= 1000 || p.output.includes('migrations applied') },
  { name: 'the queue and the first seeds starting', reached: (p) => p.output.includes('migrations applied') },
];

describe('reliability: SIGKILL during the first start-up (embedded database)', () => {
  for (const point of KILL_POINTS) {
    it(`a kill while ${point.name} leaves a directory that the next start uses`, async () => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'oas-rel-first-'));
      const options = { role: 'all' as const, dataDir, jwtKey: jwtPrivateKey(), env: { ...UNLIMITED, LOG_LEVEL: 'info' }, name: 'first-start' };
      const svc = await ServiceProcess.launch(options);
      try {
        let initdbAt: number | undefined;
        const reached = await until(`the first start to reach "${point.name}"`, async () => {
          if (!svc.running) throw new Error(`the first start ended first: ${svc.tail()}`);
          if (initdbAt === undefined && fs.existsSync(path.join(pgdata(dataDir), 'PG_VERSION'))) initdbAt = Date.now();
          const progress = { files: fileCount(pgdata(dataDir)), sinceInitdb: initdbAt === undefined ? undefined : Date.now() - initdbAt, output: svc.currentOutput };
          return point.reached(progress) ? true : undefined;
        }, 120000, 5).then(
          () => true,
          () => false,
        );
        const filesAtKill = fileCount(pgdata(dataDir));
        const killed = await svc.kill();
        const linesAtKill = svc.currentOutput.includes('migrations applied') ? 'migrations applied' : 'no line yet';

        const started = Date.now();
        await svc.restart();
        const readyMs = Date.now() - started;
        const admin = await adminLogin(svc.baseUrl);
        const product = await call(svc.baseUrl, 'POST', '/api/v1/products', { token: admin.access, body: { sku: 'FIRST-1', name: 'First', price: 5, stock: 10 } });
        assert.equal(product.status, 201, JSON.stringify(product.body));
        const order = await call(svc.baseUrl, 'POST', '/api/v1/orders', {
          token: admin.access,
          body: { items: [{ product_id: (product.body as { id: number }).id, quantity: 2 }], shipping_address: '1 First Street' },
        });
        assert.equal(order.status, 201, JSON.stringify(order.body));
        const orderId = (order.body as { id: number }).id;
        const status = await until('the order to complete', async () => {
          const r = await call(svc.baseUrl, 'GET', `/api/v1/orders/${orderId}`, { token: admin.access });
          const s = (r.body as { status?: string }).status;
          return s === 'completed' || s === 'failed' ? s : undefined;
        }, 30000, 200);

        printTable(`scenario 11: SIGKILL during the first start-up (${point.name})`, [
          ['kill point reached', reached],
          ['output of the first start when killed', linesAtKill],
          ['database files when killed', filesAtKill],
          ['kill signal', String(killed.signal)],
          ['second start: answering after (s)', round(readyMs / 1000, 1)],
          ['order placed after it', status],
        ]);
        assert.equal(killed.signal, 'SIGKILL');
        assert.equal(status, 'completed');
      } finally {
        await svc.destroy();
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    });
  }
});
