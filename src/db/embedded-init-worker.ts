// The worker thread of createEmbeddedDataDir (embedded-init.ts): PGlite creates the cluster in
// `dir` (initdb, then one start), and closes it.
import { workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';

const { dir, startParams } = workerData as { dir: string; startParams: string[] };
const pglite = await PGlite.create(dir, { startParams });
await pglite.close();
