import { databaseTemplate, removeStaleTemplates } from './database-template.ts';

/**
 * Runs once before the test files (`node --test --test-global-setup=…`): makes the migrated database
 * that every test database is copied from, so the files running in parallel do not each make it.
 */
export async function globalSetup(): Promise<void> {
  await removeStaleTemplates();
  await databaseTemplate();
}
