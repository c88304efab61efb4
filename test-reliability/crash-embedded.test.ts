import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { UNLIMITED } from './helpers/deployment.ts';
import { inspectEmbedded } from './helpers/crash.ts';
import { crashUnderLoad } from './helpers/crash-under-load.ts';
import { jwtPrivateKey, type ServiceOptions } from './helpers/service.ts';

/** Scenario 10a — SIGKILL under load on the embedded database (helpers/crash-under-load.ts). */
describe('reliability: SIGKILL under load, embedded database', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'oas-rel-crash-'));
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('loses no acknowledged write and finishes every order within 20 s of the restart', async () => {
    const options: ServiceOptions = { role: 'all', dataDir, jwtKey: jwtPrivateKey(), env: { ...UNLIMITED, LOG_LEVEL: 'info' }, name: 'embedded' };
    await crashUnderLoad('embedded', options, async (svc) => {
      await svc.stop();
      const inspector = await inspectEmbedded(dataDir);
      return { inspector, release: () => inspector.close() };
    });
  });
});
