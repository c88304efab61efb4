import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { UNLIMITED } from './helpers/deployment.ts';
import { type Acknowledged, checkNothingLost, createProducts, inspectEmbedded, placeUntil, waitNoOrderUnfinished } from './helpers/crash.ts';
import { sleep } from './helpers/infra.ts';
import { adminLogin, createUsers } from './helpers/http.ts';
import { printTable, round } from './helpers/report.ts';
import { jwtPrivateKey, ServiceProcess } from './helpers/service.ts';

/**
 * Scenario 12 — `npm start` twice on one embedded data directory (another PORT: a second terminal,
 * a restarted script) while the first serves a load of orders and items. The second must refuse in
 * one line naming the directory and the process that holds it, exit non-zero and write nothing;
 * the first goes on undisturbed, and after it stops and starts again every write it acknowledged
 * is there, stock exact.
 */
describe('reliability: two processes on one embedded data directory', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'oas-rel-owner-'));
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('refuses the second in one line, and the first loses no acknowledged write', async () => {
    const jwtKey = jwtPrivateKey();
    const owner = await ServiceProcess.start({ role: 'all', dataDir, jwtKey, env: UNLIMITED, name: 'owner' });
    let second: ServiceProcess | undefined;
    try {
      const admin = await adminLogin(owner.baseUrl);
      const users = await createUsers(owner.baseUrl, admin.access, 2, 'owner');
      const initial = await createProducts(owner.baseUrl, admin.access, 'OWNER', [50, 1000, 1000]);

      let stop = false;
      const acked: Acknowledged = { orders: [], items: [], unexpected: [], cutOff: 0 };
      const load = placeUntil(owner.baseUrl, users, [...initial.keys()], 4, () => stop, acked);
      await sleep(1000);
      const ackedBefore = acked.orders.length + acked.items.length;
      const ownerPid = owner.pid;
      const secondStarted = Date.now();
      second = await ServiceProcess.launch({ role: 'all', dataDir, jwtKey, env: UNLIMITED, name: 'second' });
      const exit = await second.exited();
      const refusedMs = Date.now() - secondStarted;
      const lines = second.currentOutput.trim().split('\n');
      // the first keeps serving after the refusal
      await sleep(1500);
      stop = true;
      await load;
      const ackedAfter = acked.orders.length + acked.items.length - ackedBefore;

      await owner.stop();
      const restartedAt = Date.now();
      await owner.restart();
      const readyMs = Date.now() - restartedAt;
      await waitNoOrderUnfinished(owner.baseUrl, (await adminLogin(owner.baseUrl)).access, 60000);
      await owner.stop();
      const inspector = await inspectEmbedded(dataDir);
      const found = await checkNothingLost(inspector, acked, initial).finally(() => inspector.close());

      printTable('scenario 12: a second process on the same data directory', [
        ['second process: exit code', String(exit.code)],
        ['second process: refused after (s)', round(refusedMs / 1000, 1)],
        ['second process: its output', lines.join(' / ')],
        ['writes acknowledged by the first while refused / in all', `${ackedAfter} / ${acked.orders.length + acked.items.length}`],
        ['first: answering again after its restart (s)', round(readyMs / 1000, 1)],
        ['acknowledged orders / items found', `${found.ordersFound} / ${found.itemsFound}`],
        ['units reserved', found.reserved],
      ]);
      assert.equal(exit.code, 1);
      assert.equal(lines.length, 1, second.currentOutput);
      assert.match(lines[0], new RegExp(`^DATA_DIR ${dataDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is in use by process ${ownerPid ?? 'none'} \\(running since `));
      assert.deepEqual(acked.unexpected, [], 'the first answered every request');
      assert.ok(ackedAfter > 0, 'the first kept serving after the refusal');
      assert.equal(found.ordersFound, acked.orders.length, 'every acknowledged order is there');
      assert.equal(found.itemsFound, acked.items.length, 'every acknowledged item is there');
    } finally {
      await second?.destroy();
      await owner.destroy();
    }
  });
});
