import type { TestContext } from 'node:test';
import pino from 'pino';
import type { Config } from '../../src/config.ts';
import type { DatabaseHandle } from '../../src/db/database.ts';
import { openDatabase } from '../../src/db/migrate.ts';
import { JobQueue } from '../../src/jobs/queue.ts';
import { defer, testConfig } from '../helpers/app.ts';

/**
 * A job queue on the test's own database, not started, in a process of `role` (a worker by
 * default) with `overrides`' settings, with the database, which closes when the test ends.
 */
export async function testQueue(
  t: TestContext,
  role: Config['role'] = 'worker',
  overrides: Partial<Config> = {},
): Promise<{ queue: JobQueue; database: DatabaseHandle; config: Config }> {
  const config = await testConfig(t, { ...overrides, role });
  const { database } = await openDatabase(config);
  defer(t, () => database.close());
  return { queue: new JobQueue(database, config, pino({ level: 'silent' })), database, config };
}
