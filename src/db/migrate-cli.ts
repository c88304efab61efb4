import { loadConfig } from '../config.ts';
import { createDatabase } from './database.ts';
import { migrateToLatest } from './migrate.ts';

const config = loadConfig();
const handle = await createDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
try {
  const applied = await migrateToLatest(handle.db);
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
} finally {
  await handle.close();
}
