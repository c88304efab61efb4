import type { PgBoss } from 'pg-boss';
import type { Db } from '../db/database.ts';
import { toJobRecord, type JobRecord, type QueueJobCounts } from './job-records.ts';
import { findJobLinks } from './jobs.repository.ts';
import { deadLetterQueueOf } from './registry.ts';

/** What operating the service reads of pg-boss's jobs, and the take-over of a dead process's jobs. */

/** The subjects whose jobs an order's trace shows. */
export interface JobSubjects {
  orderId: number;
  inboundWebhookIds: readonly number[];
  messageRowIds: readonly number[];
}

/**
 * Per queue of `names`: jobs waiting (new, or waiting for a retry), running, and failed and still
 * kept, as pg-boss's supervision last counted them.
 */
export async function jobCounts(boss: PgBoss, names: readonly string[]): Promise<QueueJobCounts[]> {
  const queues = await boss.getQueues([...names]);
  return queues.map((q) => ({ queue: q.name, queued: q.queuedCount, active: q.activeCount, failed: q.failedCount })).sort((a, b) => a.queue.localeCompare(b.queue));
}

/**
 * The jobs sent for an order, for its platform webhooks and for its outgoing messages (their
 * `job_links`), and the dead-letter copies of the order's and the webhooks' jobs, oldest first:
 * what pg-boss still keeps (finished jobs are deleted after JOB_RETENTION_DAYS).
 */
export async function jobsAbout(boss: PgBoss, db: Db, about: JobSubjects): Promise<JobRecord[]> {
  const links = await findJobLinks(db, about);
  const linked = await Promise.all(links.map((l) => boss.getJobById(l.queue, l.job_id)));
  const copies = await Promise.all([
    boss.findJobs(deadLetterQueueOf('order-process'), { data: { orderId: about.orderId } }),
    ...about.inboundWebhookIds.map((id) => boss.findJobs(deadLetterQueueOf('webhook-inbound-process'), { data: { inboundWebhookId: id } })),
  ]);
  const jobs = [...linked.filter((j) => j !== null), ...copies.flat()];
  return jobs.map(toJobRecord).sort((a, b) => a.created_on.getTime() - b.created_on.getTime() || a.id.localeCompare(b.id));
}

/** pg-boss's own queues (`__pgboss__send-it`, which forwards each cron occurrence to its queue). */
const PG_BOSS_QUEUE = /^__pgboss__/;

/**
 * Fails every job still running (pg-boss then retries it, or, on its last attempt, hands it to its
 * dead-letter queue), as pg-boss's supervision does once a job's heartbeat lapses; for a process
 * that knows no other process runs jobs (the embedded database's lock). pg-boss has no call that
 * lists the running jobs across queues, and its queue counts may be older than the job a dead
 * process fetched last, so each queue's jobs are read (`findJobs`) and the active ones failed:
 * once, at start-up. Returns how many, per queue of the service's: pg-boss's own are failed back
 * too (a cron occurrence is then forwarded at once, not after its 15 minute expiry) but not
 * counted, as a clean stop can leave one of them running.
 */
export async function takeUpLeftJobs(boss: PgBoss): Promise<Record<string, number>> {
  const takenUp: Record<string, number> = {};
  for (const { name } of await boss.getQueues()) {
    const ids = (await boss.findJobs(name)).filter((job) => job.state === 'active').map((job) => job.id);
    if (ids.length === 0) continue;
    await boss.fail(name, ids, { message: 'the process running it ended before it finished' });
    if (!PG_BOSS_QUEUE.test(name)) takenUp[name] = ids.length;
  }
  return takenUp;
}
