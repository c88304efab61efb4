import type { FastifyBaseLogger } from 'fastify';
import pg from 'pg';
import type { DatabaseHandle } from '../db/database.ts';

/**
 * Two partial indexes of the service's own on pg-boss's job table, which pg-boss (whose migrations
 * create the table, after the service's) does not have:
 * - running and failed jobs per queue, for the job metrics (waiting jobs are counted from pg-boss's
 *   own fetch index);
 * - finished jobs by completion time, which the retention purge deletes oldest first in batches.
 */
const JOB_INDEXES = [
  { name: 'oas_job_outcome_idx', definition: "(name, state) WHERE state IN ('active', 'failed')" },
  { name: 'oas_job_finished_idx', definition: "(completed_on) WHERE state > 'active'" },
] as const;

/** Held (session-level) by the one process that builds the indexes; the others go on without waiting. */
const BUILD_LOCK = 715_001;

/**
 * Creates the indexes when they are missing. On PostgreSQL without blocking job writes: the job
 * table is partitioned by queue, so the index is declared on the parent alone, built CONCURRENTLY
 * on each partition, and attached (an interrupted build is dropped and redone on the next start).
 * The embedded database serves one process and holds few jobs: a plain CREATE INDEX.
 */
export async function ensureJobIndexes(handle: DatabaseHandle, log: FastifyBaseLogger): Promise<void> {
  if (handle.pglite) {
    for (const ix of JOB_INDEXES) await handle.pglite.exec(`CREATE INDEX IF NOT EXISTS ${ix.name} ON pgboss.job ${ix.definition}`);
    return;
  }
  // its own connection: the pool's statements time out, and a build on a large table may take longer
  const client = new pg.Client({ connectionString: handle.connectionString, application_name: 'oas-job-indexes' });
  client.on('error', () => {});
  await client.connect();
  try {
    const locked = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [BUILD_LOCK]);
    if (!locked.rows[0].locked) return;
    for (const ix of JOB_INDEXES) {
      if ((await indexState(client, ix.name))?.valid) continue;
      log.info({ index: ix.name }, 'building an index on the job table');
      await buildOnPartitions(client, ix);
    }
  } finally {
    await client.end();
  }
}

async function indexState(client: pg.Client, name: string): Promise<{ valid: boolean; attached: boolean } | undefined> {
  const { rows } = await client.query<{ valid: boolean; attached: boolean }>(
    `SELECT i.indisvalid AS valid, EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid = c.oid) AS attached
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_index i ON i.indexrelid = c.oid
     WHERE n.nspname = 'pgboss' AND c.relname = $1`,
    [name],
  );
  return rows[0];
}

async function buildOnPartitions(client: pg.Client, ix: (typeof JOB_INDEXES)[number]): Promise<void> {
  const kind = await client.query<{ relkind: string }>(`SELECT relkind FROM pg_class WHERE oid = 'pgboss.job'::regclass`);
  if (kind.rows[0].relkind !== 'p') {
    await client.query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS ${ix.name} ON pgboss.job ${ix.definition}`);
    return;
  }
  await client.query(`CREATE INDEX IF NOT EXISTS ${ix.name} ON ONLY pgboss.job ${ix.definition}`);
  const partitions = await client.query<{ relname: string }>(
    `SELECT c.relname FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid WHERE h.inhparent = 'pgboss.job'::regclass ORDER BY 1`,
  );
  for (const { relname } of partitions.rows) {
    // a partition attached after the parent index was declared got an index of its own then
    const covered = await client.query(
      `SELECT 1 FROM pg_inherits h JOIN pg_index i ON i.indexrelid = h.inhrelid
       WHERE h.inhparent = $1::regclass AND i.indrelid = $2::regclass`,
      [`pgboss.${ix.name}`, `pgboss.${relname}`],
    );
    if (covered.rowCount !== 0) continue;
    const child = `${ix.name}_${relname}`.slice(0, 63);
    let state = await indexState(client, child);
    if (state && !state.valid) {
      await client.query(`DROP INDEX CONCURRENTLY pgboss.${child}`);
      state = undefined;
    }
    if (!state) await client.query(`CREATE INDEX CONCURRENTLY ${child} ON pgboss.${relname} ${ix.definition}`);
    if (!state?.attached) await client.query(`ALTER INDEX pgboss.${ix.name} ATTACH PARTITION pgboss.${child}`);
  }
}
