// createEmbeddedDataDir's child (embedded-init.ts): PGlite creates the cluster in `dir` and closes it. It ends
// with its parent, which alone renames the directory into place (an orphan's work would wait for the next start).
import { PGlite } from '@electric-sql/pglite';

const orphaned = (): never => process.exit(1);
process.on('disconnect', orphaned);
const { dir, startParams } = JSON.parse(process.argv[2] ?? '{}') as { dir: string; startParams: string[] };
const pglite = await PGlite.create(dir, { startParams });
await pglite.close();
process.off('disconnect', orphaned);
process.disconnect();
