import type { JobWithMetadata } from 'pg-boss';

/** The error message pg-boss kept as a failed job's output, whichever way the job failed. */
export function jobFailureMessage(output: unknown): string | undefined {
  if (typeof output === 'string') return output;
  if (output !== null && typeof output === 'object') {
    const o = output as { message?: unknown; value?: unknown };
    if (typeof o.message === 'string') return o.message;
    if (o.value !== undefined) return jobFailureMessage(o.value);
  }
  return undefined;
}

/** What a dead-letter job says of the job it stands for, for its handler's log line. */
export function givenUpJob(job: JobWithMetadata<unknown>): { jobId: string | null; attempts: number; cause: string | undefined } {
  return { jobId: job.sourceId, attempts: (job.sourceRetryCount ?? 0) + 1, cause: jobFailureMessage(job.sourceOutput) };
}

/** True when this attempt is the job's last one: a failure now is final. */
export function isLastAttempt(job: JobWithMetadata<unknown>): boolean {
  return job.retryCount >= job.retryLimit;
}

/** One job as pg-boss keeps it. */
export interface JobRecord {
  id: string;
  queue: string;
  state: JobWithMetadata<unknown>['state'];
  retry_count: number;
  created_on: Date;
  started_on: Date | null;
  completed_on: Date | null;
  output: unknown;
  /** the job this one stands in for, when it is a dead-letter copy */
  source_id: string | null;
}

export function toJobRecord(job: JobWithMetadata<unknown>): JobRecord {
  return {
    id: job.id,
    queue: job.name,
    state: job.state,
    retry_count: job.retryCount,
    created_on: job.createdOn,
    started_on: job.startedOn ?? null,
    completed_on: job.completedOn ?? null,
    output: job.output ?? null,
    source_id: job.sourceId ?? null,
  };
}
