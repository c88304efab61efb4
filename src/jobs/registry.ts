import type { JobWithMetadata } from 'pg-boss';

/** A job that carries nothing: a scheduled sweep. */
export type NoPayload = Record<string, never>;

/** Every queue and its jobs' payload, typing `JobQueue.send` and `work`; each module defines and works its own (in `*.jobs.ts` or its module file). */
interface Payloads {
  /** price an order and reserve its stock (orders) */
  'order-process': { orderId: number };
  /** hand the order events not yet published to their listeners; sent with every change (orders) */
  'order-events-publish': NoPayload;
  /** turn a stored platform webhook into an order (inbound-webhooks) */
  'webhook-inbound-process': { inboundWebhookId: number };
  /** tell the platform how one of its orders ended (inbound-webhooks) */
  'webhook-platform-report': { orderId: number };
  /** one attempt of one outgoing message (outbound-webhooks) */
  'webhook-deliver': { messageRowId: number; attempt: number };
  'webhook-disabled-email': { subscriptionId: number };
  'user-welcome-email': { userId: number };
  /** tell the previous address of a user that the account's e-mail changed (users) */
  'user-email-changed': { userId: number; previousEmail: string; newEmail: string; changedAt: string; changeId?: number };
  /** mail a confirmation link to the address a user gave themselves, unless it changed again since (users) */
  'user-email-verification': { userId: number; email: string; changeId?: number };
  /** tell both addresses that an e-mail change was undone, with a reset link to the restored one (users) */
  'user-email-reverted': { userId: number; restored: string; replaced: string; at: string };
  /** a password recovery request, for any e-mail: the job decides, so the request costs the same either way (auth) */
  'password-recovery-email': { email: string };
  /** scheduled: delete refresh, password reset and e-mail link tokens expired, used or revoked for a day (auth) */
  'refresh-tokens-purge': NoPayload;
  'idempotency-keys-purge': NoPayload;
  /** scheduled: delete delivered and failed outgoing messages with their attempts (outbound-webhooks) */
  'webhook-messages-purge': NoPayload;
  /** scheduled: remove the payloads of processed platform webhooks (inbound-webhooks) */
  'inbound-payloads-purge': NoPayload;
  'jobs-purge': NoPayload;
}

/** Queues whose given-up jobs go to a dead-letter queue (`<name>-dead-letter`, same payload). */
export type DeadLettered = 'order-process' | 'webhook-inbound-process';

export type DeadLetterQueue<N extends DeadLettered> = `${N}-dead-letter`;

export type JobPayloads = Payloads & { [N in DeadLettered as DeadLetterQueue<N>]: Payloads[N] };

export type JobName = keyof JobPayloads;

/** A fetched job of queue `N`, with pg-boss's metadata (attempt, dead-letter source). */
export type Job<N extends JobName> = JobWithMetadata<JobPayloads[N]>;

/** The order, platform webhook or outgoing message a job's payload names, by which an order's trace finds it; else undefined. */
export function jobSubjectOf(data: unknown) {
  if (data === null || typeof data !== 'object') return undefined;
  const d = data as Record<string, unknown>;
  const id = (key: string) => (typeof d[key] === 'number' ? (d[key] as number) : null);
  const subject = { orderId: id('orderId'), inboundWebhookId: id('inboundWebhookId'), messageRowId: id('messageRowId') };
  return subject.orderId === null && subject.inboundWebhookId === null && subject.messageRowId === null ? undefined : subject;
}

export function deadLetterQueueOf<N extends DeadLettered>(queue: N): DeadLetterQueue<N> {
  return `${queue}-dead-letter`;
}

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
