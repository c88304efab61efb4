import type { JobWithMetadata } from 'pg-boss';

/** A job that carries nothing: a scheduled sweep. */
export type NoPayload = Record<string, never>;

/**
 * Every queue of the service and the payload its jobs carry, which types `JobQueue.send` and
 * `JobQueue.work`. Each module defines its queues and registers its workers in its own `*.jobs.ts`.
 */
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
  /** tell the owner that the service disabled their subscription (outbound-webhooks) */
  'webhook-disabled-email': { subscriptionId: number };
  /** the welcome e-mail of a new user (users) */
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
  /** scheduled: delete expired Idempotency-Key responses (orders) */
  'idempotency-keys-purge': NoPayload;
  /** scheduled: delete delivered and failed outgoing messages with their attempts (outbound-webhooks) */
  'webhook-messages-purge': NoPayload;
  /** scheduled: remove the payloads of processed platform webhooks (inbound-webhooks) */
  'inbound-payloads-purge': NoPayload;
  /** scheduled: delete finished jobs (operations) */
  'jobs-purge': NoPayload;
}

/** Queues whose given-up jobs go to a dead-letter queue (`<name>-dead-letter`, same payload). */
export type DeadLettered = 'order-process' | 'webhook-inbound-process';

export type DeadLetterQueue<N extends DeadLettered> = `${N}-dead-letter`;

export type JobPayloads = Payloads & { [N in DeadLettered as DeadLetterQueue<N>]: Payloads[N] };

export type JobName = keyof JobPayloads;

/** A fetched job of queue `N`, with pg-boss's metadata (attempt, dead-letter source). */
export type Job<N extends JobName> = JobWithMetadata<JobPayloads[N]>;

/**
 * What a job is about: the order, platform webhook or outgoing message (webhook_messages.id) its
 * payload names, recorded when it is sent so that the trace of an order finds every job run for it.
 */
export interface JobSubject {
  orderId: number | null;
  inboundWebhookId: number | null;
  messageRowId: number | null;
}

/** The subject of a job from its payload; undefined for a job about none of them (a purge, an e-mail). */
export function jobSubjectOf(data: unknown): JobSubject | undefined {
  if (data === null || typeof data !== 'object') return undefined;
  const d = data as Record<string, unknown>;
  const id = (key: string) => (typeof d[key] === 'number' ? (d[key] as number) : null);
  const subject = { orderId: id('orderId'), inboundWebhookId: id('inboundWebhookId'), messageRowId: id('messageRowId') };
  return subject.orderId === null && subject.inboundWebhookId === null && subject.messageRowId === null ? undefined : subject;
}

/** The name of the dead-letter queue of `queue`. */
export function deadLetterQueueOf<N extends DeadLettered>(queue: N): DeadLetterQueue<N> {
  return `${queue}-dead-letter`;
}
