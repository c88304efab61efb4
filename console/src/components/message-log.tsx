import { useState } from 'preact/hooks';
import { ok } from '../api.ts';
import { when } from '../format.ts';
import { useSession } from '../session.ts';
import { href } from '../router.ts';
import type { Delivery } from '../types.ts';
import { useAction, useData, usePoll } from '../use-data.ts';
import { Badge, ErrorNotice, Notice } from './notice.tsx';
import { Head } from './table.tsx';

const PAGE_SIZE = 20;
const STATES = ['pending', 'delivered', 'failed'] as const;
/** While a message on the page is pending, how often the log is read again. */
const POLL_MS = 2000;

/** What an attempt got back, in a few words. */
export function attemptResult(a: { success: boolean; status_code: number | null; error: string | null }): string {
  const answer = a.status_code === null ? 'no answer' : `HTTP ${a.status_code}`;
  return a.success ? answer : `${answer}${a.error ? `: ${a.error}` : ''}`;
}

/**
 * A subscription's delivery attempts, newest first, paged by the API (its own page and filter, kept
 * in this component so the page's address stays the subscription's). Resend on each message's
 * newest attempt on the page. `version` changes when the page did something that adds attempts.
 */
export function MessageLog({ subscriptionId, version }: { subscriptionId: number; version: number }) {
  const { api } = useSession();
  const [page, setPage] = useState(1);
  const [status, setStatus] = useState<(typeof STATES)[number] | ''>('');
  const log = useData(
    () =>
      ok(
        api.GET('/api/v2/webhooks/subscriptions/{subscription_id}/deliveries', {
          params: { path: { subscription_id: subscriptionId }, query: { page, page_size: PAGE_SIZE, status: status || undefined } },
        }),
      ),
    [subscriptionId, page, status, version],
  );
  const action = useAction();
  const rows = log.data?.items ?? [];
  usePoll(() => log.reload(), POLL_MS, rows.some((d) => d.message_status === 'pending'));

  const resend = (d: Delivery) =>
    action.run(async () => {
      const queued = await ok(
        api.POST('/api/v2/webhooks/subscriptions/{subscription_id}/messages/{message_id}/resend', {
          params: { path: { subscription_id: subscriptionId, message_id: d.message_id } },
        }),
      );
      await log.reload();
      return `${queued.message} (${d.message_id}).`;
    });
  const newest = new Set<number>();
  const seen = new Set<string>();
  for (const d of rows) if (!seen.has(d.message_id) && seen.add(d.message_id)) newest.add(d.id);

  return (
    <section aria-labelledby="log-title">
      <h2 id="log-title">Message log</h2>
      <div class="filters">
        <div class="field">
          <label for="log-status">Message state</label>
          <select
            id="log-status"
            value={status}
            onChange={(e) => {
              setStatus(STATES.find((s) => s === e.currentTarget.value) ?? '');
              setPage(1);
            }}
          >
            <option value="">Any</option>
            {STATES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
      </div>
      <ErrorNotice message={log.error ?? action.error} />
      <Notice>{action.notice}</Notice>
      <table aria-labelledby="log-title">
        <Head cols={['Time', 'Event', ['Attempt', 'num'], 'Result', ['Duration', 'num'], 'Message', 'Action']} />
        <tbody>
          {rows.map((d) => (
            <tr key={d.id}>
              <td>{when(d.created_at)}</td>
              <td>
                {d.event_type}
                {d.order_id !== null && ` (order ${d.order_id})`}
              </td>
              <td class="num">{d.attempt}</td>
              <td class="wrap">{attemptResult(d)}</td>
              <td class="num">{d.duration_ms === null ? '' : `${d.duration_ms} ms`}</td>
              <td>
                <a href={href(`/webhooks/${subscriptionId}/messages/${d.message_id}`)}>{d.message_id}</a>{' '}
                {d.message_status && <Badge value={d.message_status} />}
              </td>
              <td>
                {newest.has(d.id) && d.message_status !== 'pending' && (
                  <button type="button" disabled={action.busy} onClick={() => void resend(d)}>
                    Resend
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {log.data && rows.length === 0 && <p>No delivery attempt{status ? ` of a ${status} message` : ''} yet.</p>}
      {log.data && <PagerButtons info={log.data} onPage={setPage} />}
    </section>
  );
}

/** Paging inside a page section: buttons, not addresses. */
function PagerButtons({ info, onPage }: { info: { page: number; page_size: number; total: number; has_next: boolean }; onPage: (p: number) => void }) {
  return (
    <div class="pager">
      <button type="button" disabled={info.page <= 1} onClick={() => onPage(info.page - 1)}>
        Newer attempts
      </button>
      <span>
        Page {info.page} of {Math.max(1, Math.ceil(info.total / info.page_size))} · {info.total} attempts
      </span>
      <button type="button" disabled={!info.has_next} onClick={() => onPage(info.page + 1)}>
        Older attempts
      </button>
    </div>
  );
}
