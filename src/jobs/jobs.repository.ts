import { sql, type Expression, type RawBuilder, type Transaction } from 'kysely';
import type { Db } from '../db/database.ts';
import type { Database } from '../db/schema.ts';
import { notifyChannelSql } from 'pg-boss/dist/plans.js';
import type { JobSubject } from './registry.ts';

/**
 * The service's SQL on jobs: `job_links` (what each job is about), `purged_job_counts`, and reads and
 * deletes of pg-boss's own job table (schema `pgboss`), which nothing outside src/jobs touches.
 */

/** Records what job `jobId` of `queue` is about, in the transaction that sent it. */
export async function insertJobLink(db: Db | Transaction<Database>, jobId: string, queue: string, subject: JobSubject): Promise<void> {
  await db
    .insertInto('job_links')
    .values({
      job_id: jobId,
      queue,
      order_id: subject.orderId,
      inbound_webhook_id: subject.inboundWebhookId,
      message_row_id: subject.messageRowId,
    })
    .execute();
}

/** The `job_links` column that names each kind of subject. */
const SUBJECT_COLUMN: Record<keyof JobSubject, string> = { orderId: 'order_id', inboundWebhookId: 'inbound_webhook_id', messageRowId: 'message_row_id' };

/**
 * How a job is inserted into a queue of pg-boss's: its table, and the channel of the NOTIFY that
 * wakes its workers. `linkedJobCtes` inserts the job as pg-boss's `send` does with no options (its
 * `insertJobs`, every column from the queue's settings), as part of another statement.
 */
export interface JobInsert {
  /** names what the insert's text depends on, for the key of a statement compiled once per shape */
  key: string;
  queue: string;
  /** pg-boss's schema */
  schema: string;
  /** the channel of pg-boss's NOTIFY for a new job, when the queue notifies */
  notifyChannel: string | undefined;
  /** the queue's table, schema-qualified */
  table: string;
  /** the columns the insert sets: `id`, `data`, then those of `settings` */
  columns: string;
  /** the values of the columns after `id` and `data`, from the queue's row `q` (`jobSettings`) */
  settings: string;
}

/**
 * A job of pg-boss's table (as `alias`) that a fetch would take now: waiting, not held back by its
 * group, and due. The sweep for jobs come due (`JobQueue.sweepDue`) and a new job's NOTIFY
 * (`linkedJobCtes`) must agree on it: the sweep is what finds a job whose NOTIFY was skipped.
 */
export function readyToFetch(alias: string): string {
  return `${alias}.state < 'active' AND NOT ${alias}.blocked AND ${alias}.start_after <= now()`;
}

/** How old the jobs ready in a queue may be for a new job to send no NOTIFY (see `linkedJobCtes`). */
export const QUIET_NOTIFY_MS = 100;

/** How far back a new job looks for jobs ready in its queue (see `recentReadyJobs`). */
export const READY_LOOKBACK_MS = 10 * QUIET_NOTIFY_MS;

/**
 * The creation time of the oldest job of default priority in `queue` (of table `table`) that was
 * sent in the last READY_LOOKBACK_MS and is ready to fetch, or no row. The bounds make it a short
 * range of pg-boss's fetch index (name, priority, created_on): the index keeps an entry for every
 * job that was ever ready until VACUUM removes it, and a scan from the queue's oldest entry, as the
 * fetch's order gives it, reads every job fetched since (bench/README.md, finding 64).
 */
export function recentReadyJobs(table: string, queue: unknown): RawBuilder<Date> {
  return sql<Date>`SELECT w.created_on FROM ${sql.raw(table)} AS w
    WHERE w.name = ${queue} AND w.priority = 0 AND w.created_on > now() - ${sql.lit(`${READY_LOOKBACK_MS} milliseconds`)}::interval
      AND ${sql.raw(readyToFetch('w'))}
    ORDER BY w.priority DESC, w.created_on LIMIT 1`;
}

/**
 * The columns of a new job besides its id and data, from queue row `q`, as pg-boss's `send` sets
 * them for a job sent with no options (its `insertJobs`: now is `job_now()`, every setting comes
 * from the queue); the table's defaults fill the rest (state, retry count). One INSERT … SELECT of
 * them costs the API's PostgreSQL backend less than pg-boss's own insert, which reads its jobs from
 * a JSON array of 21 options through `json_to_recordset` (bench/README.md, finding 65). A test
 * holds every column to a job of pg-boss's own send (test/jobs/linked-job.test.ts).
 */
function jobSettings(schema: string): [column: string, value: string][] {
  const now = `${schema}.job_now()`;
  return [
    ['name', 'q.name'],
    ['priority', '0'],
    ['start_after', now],
    ['created_on', now],
    ['expire_seconds', 'q.expire_seconds'],
    ['deletion_seconds', 'q.deletion_seconds'],
    ['keep_until', `${now} + q.retention_seconds * interval '1s'`],
    ['retry_limit', 'q.retry_limit'],
    ['retry_delay', 'q.retry_delay'],
    ['retry_backoff', 'COALESCE(q.retry_backoff, false)'],
    ['retry_delay_max', 'q.retry_delay_max'],
    ['policy', 'q.policy'],
    ['dead_letter', 'q.dead_letter'],
    ['heartbeat_seconds', 'q.heartbeat_seconds'],
    ['blocked', 'false'],
    ['blocking', 'false'],
    ['pending_dependencies', '0'],
  ];
}

/** The insert of a job into `queue`'s table `table` in pg-boss's schema `schema`, its text worked out once. */
export function jobInsertOf(schema: string, queue: { name: string; table: string; notify: boolean }): JobInsert {
  const settings = jobSettings(schema);
  return {
    key: `${schema} ${queue.table} ${queue.name} ${queue.notify}`,
    queue: queue.name,
    schema,
    notifyChannel: queue.notify ? notifyChannelSql(schema) : undefined,
    table: `${schema}.${queue.table}`,
    columns: ['id', 'data', ...settings.map(([column]) => column)].join(', '),
    settings: settings.map(([, value]) => value).join(', '),
  };
}

/**
 * Job `jobId` (of `insert`'s queue) and its link, as CTEs of another module's statement that
 * creates the job's subject: `subjects` yields the new subject's id as `id`, and no row means no
 * job and no link. The job's data is `{ [kind]: id }` with `extra`'s fields (the trace context).
 * `jobId` (a uuid) and `extra` (JSON text) are used as values only, so they may be `compileOnce`'s
 * stand-ins. The job has the columns pg-boss's `send` gives a job sent with no options (`jobSettings`),
 * and wakes the workers by the same NOTIFY in the same statement. The CTEs end with `alongside`, one row
 * per job created, which the statement must read: that is what runs its NOTIFY (PostgreSQL runs a
 * SELECT in WITH only when it is read). A subject created without its job (the id taken: the
 * insert skips it, as pg-boss's does) fails the whole statement, in the link's insert, which runs in any case: a link
 * never names a job that does not exist, whether the statement runs in a transaction or alone.
 */
export function linkedJobCtes(
  insert: JobInsert,
  job: { jobId: unknown; kind: keyof JobSubject; subjects: Expression<{ id: number }>; extra: unknown },
): RawBuilder<unknown> {
  // No NOTIFY when the queue holds jobs ready to fetch and the oldest of them is younger than
  // QUIET_NOTIFY_MS: the NOTIFY of one of them (or the sweep for jobs come due) woke the workers a
  // moment ago, and the fetch that takes it, or the one after its batch (the loop of a queue
  // fetched in batches, as the queues of linked jobs are, fetches again after every batch it got:
  // `JobQueue.start`), takes this job too. Jobs sent every few milliseconds then wake the workers,
  // and every listening backend, once per batch and not once per job (bench/README.md, findings 61
  // and 68). A job that neither fetch took (sent by a transaction whose snapshot predates the fetch
  // that took the others, and committed after the fetch behind it) ages past the bound, and the
  // next job's NOTIFY wakes the workers for both: without the bound, every job sent behind it would
  // stay silent too, until the sweep. Only the jobs sent in the last READY_LOOKBACK_MS count
  // (`recentReadyJobs`): a job left behind is met by the NOTIFY of the first job sent between its
  // aging past the bound and its leaving the look-back; with no job sent in that time, it is the
  // sweep's, as is a ready job of another priority.
  const oldestReady = recentReadyJobs(insert.table, insert.queue);
  const woken =
    insert.notifyChannel === undefined
      ? sql`NULL`
      : sql`CASE WHEN (${oldestReady}) > now() - ${sql.lit(`${QUIET_NOTIFY_MS} milliseconds`)}::interval THEN NULL ELSE pg_notify(${sql.raw(insert.notifyChannel)}, ${insert.queue}) END`;
  // the error names the subject (a column: the message cannot be folded into a constant and raised
  // while the statement is planned, whatever the CASE decides)
  const notCreated = sql`('job ' || ${job.jobId} || ' of ' || ${insert.queue} || ' for ' || s.id || ' was not created')::uuid`;
  return sql`linked_job AS (
      INSERT INTO ${sql.raw(insert.table)} (${sql.raw(insert.columns)})
      SELECT ${job.jobId}::uuid, jsonb_build_object(${job.kind}::text, s.id) || ${job.extra}::jsonb, ${sql.raw(insert.settings)}
      FROM ${job.subjects} AS s JOIN ${sql.raw(insert.schema)}.queue AS q ON q.name = ${insert.queue}
      ON CONFLICT DO NOTHING
      RETURNING id
    ),
    linked_job_link AS (
      INSERT INTO job_links (job_id, queue, ${sql.ref(SUBJECT_COLUMN[job.kind])})
      SELECT CASE WHEN j.id IS NULL THEN ${notCreated} ELSE j.id END, ${insert.queue}, s.id
      FROM ${job.subjects} AS s LEFT JOIN linked_job AS j ON true
    ),
    alongside AS (SELECT ${woken} FROM linked_job)`;
}

export type JobState = 'created' | 'retry' | 'active' | 'completed' | 'cancelled' | 'failed';

/** One job as pg-boss keeps it. */
export interface JobRecord {
  id: string;
  queue: string;
  state: JobState;
  retry_count: number;
  created_on: Date;
  started_on: Date | null;
  completed_on: Date | null;
  output: unknown;
  /** the job this one stands in for, when it is a dead-letter copy */
  source_id: string | null;
}

const jobColumns = sql.raw(`j.id::text AS id, j.name AS queue, j.state::text AS state, j.retry_count, j.created_on, j.started_on,
  j.completed_on, j.output, j.source_id::text AS source_id`);

/**
 * The jobs sent for an order, for its platform webhooks and for its outgoing messages, and the
 * dead-letter copies of any of them, oldest first. Only what pg-boss still keeps: finished jobs are
 * deleted after the job retention period.
 */
export async function findJobsFor(
  db: Db,
  about: { orderId: number; inboundWebhookIds: readonly number[]; messageRowIds: readonly number[] },
): Promise<JobRecord[]> {
  const { rows } = await sql<JobRecord>`
    WITH linked AS (
      SELECT queue, job_id FROM job_links
      WHERE order_id = ${about.orderId}
        OR inbound_webhook_id = ANY(${[...about.inboundWebhookIds]}::integer[])
        OR message_row_id = ANY(${[...about.messageRowIds]}::integer[])
    )
    SELECT ${jobColumns} FROM linked l JOIN pgboss.job j ON j.name = l.queue AND j.id = l.job_id
    UNION ALL
    SELECT ${jobColumns} FROM pgboss.job j
    WHERE j.source_root_id IS NOT NULL AND j.source_root_id IN (SELECT job_id FROM linked)
    ORDER BY created_on, id
  `.execute(db);
  return rows;
}

/** Per queue: jobs waiting (created, or waiting for a retry), running, and failed for good since the start. */
export interface QueueJobCounts {
  queue: string;
  queued: number;
  active: number;
  failed: number;
}

/**
 * Counts of every queue of the service (pg-boss's internal `__pgboss__…` queues apart), each from an index: waiting jobs from pg-boss's fetch index, running and
 * failed ones from `oas_job_outcome_idx` (see job-indexes.ts). Failed jobs the purge deleted are
 * added back from `purged_job_counts`, so `failed` only grows.
 */
export async function countJobsByQueue(db: Db): Promise<QueueJobCounts[]> {
  const { rows } = await sql<{ queue: string; queued: number; active: number; failed: number }>`
    SELECT q.name AS queue,
      coalesce(w.n, 0)::integer AS queued,
      coalesce(o.active, 0)::integer AS active,
      (coalesce(o.failed, 0) + coalesce(p.failed, 0))::bigint AS failed
    FROM pgboss.queue q
    LEFT JOIN (SELECT name, count(*) AS n FROM pgboss.job WHERE state < 'active' AND NOT blocked GROUP BY name) w ON w.name = q.name
    LEFT JOIN (
      SELECT name, count(*) FILTER (WHERE state = 'active') AS active, count(*) FILTER (WHERE state = 'failed') AS failed
      FROM pgboss.job WHERE state IN ('active', 'failed') GROUP BY name
    ) o ON o.name = q.name
    LEFT JOIN purged_job_counts p ON p.queue = q.name
    WHERE NOT starts_with(q.name, '__pgboss__')
    ORDER BY q.name
  `.execute(db);
  return rows.map((r) => ({ queue: r.queue, queued: Number(r.queued), active: Number(r.active), failed: Number(r.failed) }));
}

/**
 * Deletes up to `limit` jobs that finished (completed, cancelled or failed) before `before`, with
 * their links, and counts the failed ones in `purged_job_counts`; one short statement. Returns how
 * many it deleted.
 */
export async function purgeFinishedJobs(db: Db, before: Date, limit: number): Promise<number> {
  const { rows } = await sql<{ deleted: number }>`
    WITH doomed AS (
      SELECT name, id FROM pgboss.job
      WHERE state > 'active' AND completed_on < ${before}
      ORDER BY completed_on
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    ), gone AS (
      DELETE FROM pgboss.job j USING doomed d WHERE j.name = d.name AND j.id = d.id
      RETURNING j.name, j.id, j.state
    ), unlinked AS (
      DELETE FROM job_links l USING gone g WHERE l.job_id = g.id
      RETURNING 1
    ), counted AS (
      INSERT INTO purged_job_counts AS c (queue, failed)
      SELECT name, count(*) FROM gone WHERE state = 'failed' GROUP BY name ORDER BY name
      ON CONFLICT (queue) DO UPDATE SET failed = c.failed + excluded.failed
      RETURNING 1
    )
    SELECT count(*)::integer AS deleted FROM gone
  `.execute(db);
  return Number(rows[0]?.deleted ?? 0);
}

/**
 * Deletes up to `limit` links created before `before` whose job pg-boss removed by itself (a job
 * that was never started within its queue's retention); links of purged jobs go with their jobs.
 */
export async function purgeOrphanJobLinks(db: Db, before: Date, limit: number): Promise<number> {
  const { rows } = await sql<{ deleted: number }>`
    WITH doomed AS (
      SELECT l.job_id FROM job_links l
      WHERE l.created_at < ${before}
        AND NOT EXISTS (SELECT 1 FROM pgboss.job j WHERE j.name = l.queue AND j.id = l.job_id)
      ORDER BY l.created_at
      LIMIT ${limit}
    ), gone AS (
      DELETE FROM job_links l USING doomed d WHERE l.job_id = d.job_id RETURNING 1
    )
    SELECT count(*)::integer AS deleted FROM gone
  `.execute(db);
  return Number(rows[0]?.deleted ?? 0);
}

/** True when a job of `queue` about platform webhook `inboundWebhookId` was sent after `since`. */
export async function inboundJobSentSince(db: Db, queue: string, inboundWebhookId: number, since: Date): Promise<boolean> {
  const row = await db
    .selectFrom('job_links')
    .select('job_id')
    .where('inbound_webhook_id', '=', inboundWebhookId)
    .where('queue', '=', queue)
    .where('created_at', '>', since)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}
