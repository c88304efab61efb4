import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { UNLIMITED } from './helpers/deployment.ts';
import { inspectEmbedded } from './helpers/crash.ts';
import { call } from './helpers/http.ts';
import { crashUnderLoad } from './helpers/crash-under-load.ts';
import { jwtPrivateKey, type ServiceOptions } from './helpers/service.ts';

/**
 * Scenario 10a — SIGKILL under load on the embedded database (helpers/crash-under-load.ts). Order
 * processing keeps up with the load there, so a kill rarely finds an order job running: a
 * subscriber that never answers keeps deliveries running instead, and the restarted process must
 * take them up again (and say so).
 */
describe('reliability: SIGKILL under load, embedded database', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'oas-rel-crash-'));
  const held: http.ServerResponse[] = [];
  const subscriber = http.createServer((_req, res) => void held.push(res));
  after(async () => {
    for (const res of held) res.destroy();
    await new Promise((resolve) => subscriber.close(resolve));
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('loses no acknowledged write and finishes every order within 20 s of the restart', async () => {
    const options: ServiceOptions = { role: 'all', dataDir, jwtKey: jwtPrivateKey(), env: { ...UNLIMITED, LOG_LEVEL: 'info' }, name: 'embedded' };
    await new Promise<void>((resolve) => subscriber.listen(0, '127.0.0.1', resolve));
    const { port } = subscriber.address() as AddressInfo;
    const takenUp = await crashUnderLoad(
      'embedded',
      options,
      async (svc) => {
        await svc.stop();
        const inspector = await inspectEmbedded(dataDir);
        return { inspector, release: () => inspector.close() };
      },
      async (base, adminToken) => {
        // an administrator's subscription receives every order's events
        const r = await call(base, 'POST', '/api/v1/webhooks/subscriptions', {
          token: adminToken,
          body: { url: `http://127.0.0.1:${port}/hook`, events: ['order.created', 'order.status_changed'] },
        });
        assert.equal(r.status, 201, JSON.stringify(r.body));
      },
    );
    assert.match(String(takenUp.msg), /jobs taken up again after a crash: .*webhook-deliver \d+/);
  });
});
