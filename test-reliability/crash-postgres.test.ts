import { after, describe, it } from 'node:test';
import { Deployment } from './helpers/deployment.ts';
import { crashUnderLoad } from './helpers/crash-under-load.ts';

/** Scenario 10b — SIGKILL under load on PostgreSQL (helpers/crash-under-load.ts); fast enough for the CI smoke. */
describe('reliability: SIGKILL under load, PostgreSQL', () => {
  let d: Deployment | undefined;
  after(async () => {
    await d?.destroy();
  });

  it('loses no acknowledged write and finishes every order within 20 s of the restart', async () => {
    d = await Deployment.create({ redis: false });
    const inspector = d.inspector;
    // the Deployment's inspector reads the live database; the Deployment closes it
    await crashUnderLoad('postgres', d.options('all', { LOG_LEVEL: 'info' }, 'postgres'), async () => ({ inspector, release: async () => {} }));
  });
});
