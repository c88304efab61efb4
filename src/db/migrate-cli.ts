import { loadConfigOrExit } from '../config.ts';
import { DataDirInUse } from './data-dir-lock.ts';
import { createDatabase } from './database.ts';
import { DataFromNewerRelease, databaseOptions, migrateToLatest } from './migrate.ts';

const config = loadConfigOrExit();
// the same connection settings as the service: no named statements behind a transaction-pooling proxy
const handle = await createDatabase({ ...databaseOptions(config), poolSize: 2, applicationName: 'oas-migrate' }).catch((err: unknown) => {
  // the embedded database's directory, held by a running service: one line, not a stack
  if (!(err instanceof DataDirInUse)) throw err;
  console.error(err.message);
  process.exit(1);
});
try {
  const applied = await migrateToLatest(handle.db);
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
} catch (err) {
  if (!(err instanceof DataFromNewerRelease)) throw err;
  console.error(err.message);
  process.exitCode = 1;
} finally {
  await handle.close();
}
