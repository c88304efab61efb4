import { useEffect, useState } from 'preact/hooks';
import type { V2Paths } from '../../../clients/typescript/client.ts';
import { ok } from '../api.ts';
import { plural } from '../format.ts';
import { useOrderEvents } from '../live.ts';
import { href } from '../router.ts';
import { useSession } from '../session.ts';
import type { Read } from '../types.ts';
import { useAction, useData, usePoll } from '../use-data.ts';
import { FilterForm } from './filter-form.tsx';
import { Badge, ErrorNotice, Notice } from './notice.tsx';
import { When } from './when.tsx';

type MessagePage = Read<'/api/v2/webhooks/subscriptions/{subscription_id}/messages'>;
type MessageItem = MessagePage['items'][number];
type MessageQuery = NonNullable<V2Paths['/api/v2/webhooks/subscriptions/{subscription_id}/messages']['get']['parameters']['query']>;
export type MessageEventType = NonNullable<MessageQuery['event_type']>;

const PAGE_SIZE = 20;
const STATES = ['pending', 'delivered', 'failed'] as const;
/** Every type a message can have, for the filter (GET /api/v2/webhooks/event-types describes them). */
export const MESSAGE_EVENT_TYPES: readonly MessageEventType[] = ['order.created', 'order.status_changed', 'order.cancelled', 'webhook.test'];
/** While a message on the page is pending, or just after an order event, how often the list is read again. */
const POLL_MS = 1000;
/**
 * Reads after an order event: the event streams as its order changes, and the messages it makes
 * are written a moment later (when the event is handed to the webhooks), then attempted; on a busy
 * service that can take seconds.
 */
const FOLLOW_POLLS = 10;

/** What an attempt got back, in a few words: the service's error already names the HTTP status. */
export function attemptResult(a: { success: boolean; status_code: number | null; error: string | null }): string {
  if (a.error) return a.error;
  return a.status_code === null ? 'no answer' : `HTTP ${a.status_code}`;
}

/**
 * A subscription's messages, newest first, each with its attempts under it (oldest first), paged
 * and filtered by the API (kept in this component, so the page's address stays the subscription's).
 * It follows the order events and reads again while a message is pending; `version` changes when
 * the page did something that adds messages or attempts; `onLoaded` is told each time the list is read.
 */
export function MessageLog({ subscriptionId, version, onLoaded }: { subscriptionId: number; version: number; onLoaded?: () => void }) {
  const { api } = useSession();
  const [page, setPage] = useState(1);
  const [status, setStatus] = useState<(typeof STATES)[number] | ''>('');
  const [eventType, setEventType] = useState<MessageEventType | ''>('');
  const log = useData(
    () =>
      ok(
        api.GET('/api/v2/webhooks/subscriptions/{subscription_id}/messages', {
          params: {
            path: { subscription_id: subscriptionId },
            query: { page, page_size: PAGE_SIZE, status: status || undefined, event_type: eventType || undefined },
          },
        }),
      ),
    [subscriptionId, page, status, eventType],
    { live: true },
  );
  // the page's action added messages or attempts: read again, keeping the list shown meanwhile
  useEffect(() => {
    if (version > 0) void log.reload();
  }, [version]);
  useEffect(() => {
    if (log.data) onLoaded?.();
  }, [log.data]);
  const [follow, setFollow] = useState(0);
  // an order's change may bring messages a few seconds later; the stream's opening (no event) does not
  useOrderEvents((e) => {
    if (e) setFollow(FOLLOW_POLLS);
  });
  const items = log.data?.items ?? [];
  usePoll(
    async () => {
      setFollow((n) => Math.max(0, n - 1));
      await log.reload();
    },
    POLL_MS,
    follow > 0 || items.some((m) => m.status === 'pending'),
  );
  const action = useAction();

  const resend = (m: MessageItem) =>
    action.run(async () => {
      const queued = await ok(
        api.POST('/api/v2/webhooks/subscriptions/{subscription_id}/messages/{message_id}/resend', {
          params: { path: { subscription_id: subscriptionId, message_id: m.message_id } },
        }),
      );
      await log.reload();
      return `${queued.message} (${m.message_id}).`;
    });
  const filtered = status !== '' || eventType !== '';

  return (
    <section aria-labelledby="log-title">
      <h2 id="log-title">Messages</h2>
      <FilterForm
        label="Filter messages"
        fields={[
          { name: 'event_type', label: 'Event type', type: 'select', options: MESSAGE_EVENT_TYPES },
          { name: 'status', label: 'Message state', type: 'select', options: STATES },
        ]}
        values={{ event_type: eventType, status }}
        onApply={(v) => {
          setEventType(MESSAGE_EVENT_TYPES.find((t) => t === v.event_type) ?? '');
          setStatus(STATES.find((st) => st === v.status) ?? '');
          setPage(1);
        }}
      />
      <ErrorNotice message={log.error ?? action.error} />
      <Notice>{action.notice}</Notice>
      {items.map((m) => (
        <MessageEntry key={m.message_id} subscriptionId={subscriptionId} message={m} busy={action.busy} onResend={() => void resend(m)} />
      ))}
      {log.data && items.length === 0 && <p>{filtered ? 'No message matches these filters.' : 'No message yet.'}</p>}
      {log.data && <PagerButtons info={log.data} onPage={setPage} />}
    </section>
  );
}

/** One message: what it is and its state, and its attempts under it. */
function MessageEntry({ subscriptionId, message: m, busy, onResend }: { subscriptionId: number; message: MessageItem; busy: boolean; onResend: () => void }) {
  const titleId = `message-${m.message_id}`;
  return (
    <article class="card" aria-labelledby={titleId}>
      <h3 id={titleId}>
        <code>{m.event_type}</code> {m.order_id === null ? '(test send)' : `(order ${m.order_id})`} <Badge value={m.status} />
      </h3>
      <p>
        <a href={href(`/webhooks/${subscriptionId}/messages/${m.message_id}`)}>{m.message_id}</a> · <When at={m.created_at} /> ·{' '}
        {plural(m.attempts.length, 'attempt')}
      </p>
      {m.attempts.length > 0 && (
        <div class="timeline">
          <ol aria-label={`Attempts of ${m.message_id}`}>
            {m.attempts.map((a) => (
              <li key={a.attempt} class={`entry tone-${a.success ? 'good' : 'bad'}`}>
                <strong>
                  Attempt {a.attempt}: {attemptResult(a)}
                </strong>
                <span class="entry-meta">
                  <When at={a.created_at} />
                  {a.duration_ms === null ? '' : ` · ${a.duration_ms} ms`}
                </span>
              </li>
            ))}
          </ol>
        </div>
      )}
      {m.status !== 'pending' && (
        <button type="button" disabled={busy} aria-label={`Resend ${m.message_id}`} onClick={onResend}>
          Resend
        </button>
      )}
    </article>
  );
}

/** Paging inside a page section: buttons, not addresses. */
function PagerButtons({ info, onPage }: { info: MessagePage; onPage: (p: number) => void }) {
  const pages = Math.max(1, Math.ceil(info.total / info.page_size));
  return (
    <div class="pager">
      <button type="button" disabled={info.page <= 1} onClick={() => onPage(info.page - 1)}>
        Newer messages
      </button>
      <span>
        Page {info.page} of {info.total_exact ? pages : `more than ${pages}`} · {info.total_exact ? plural(info.total, 'message') : `more than ${info.total} messages`}
      </span>
      <button type="button" disabled={!info.has_next} onClick={() => onPage(info.page + 1)}>
        Older messages
      </button>
    </div>
  );
}
