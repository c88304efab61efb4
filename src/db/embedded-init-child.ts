// The child process of createEmbeddedDataDir (embedded-init.ts): PGlite creates the cluster in
// `dir` (initdb, then one start), and closes it. It ends with its parent: an orphan would go on
// writing a directory that the parent's next start removes and creates again.
import { PGlite } from '@electric-sql/pglite';

const orphaned = (): never => process.exit(1);
process.on('disconnect', orphaned);
const { dir, startParams } = JSON.parse(process.argv[2] ?? '{}') as { dir: string; startParams: string[] };
const pglite = await PGlite.create(dir, { startParams });
await pglite.close();
process.off('disconnect', orphaned);
process.disconnect();
