import { ok } from '../api.ts';
import { attemptResult } from '../components/message-log.tsx';
import { Badge, ErrorNotice, Notice } from '../components/notice.tsx';
import { Page } from '../components/page.tsx';
import { When } from '../components/when.tsx';
import { href } from '../router.ts';
import { useSession } from '../session.ts';
import { useAction, useData, usePoll } from '../use-data.ts';
import { Head } from '../components/table.tsx';

const POLL_MS = 2000;

/** One outgoing message: the body and headers sent, every attempt with the start of its answer, and Resend. */
export function MessagePage({ subscriptionId, messageId }: { subscriptionId: number; messageId: string }) {
  const { api } = useSession();
  const path = { params: { path: { subscription_id: subscriptionId, message_id: messageId } } };
  const message = useData(() => ok(api.GET('/api/v2/webhooks/subscriptions/{subscription_id}/messages/{message_id}', path)), [subscriptionId, messageId]);
  const action = useAction();
  const m = message.data;
  usePoll(() => message.reload(), POLL_MS, m?.status === 'pending');

  const resend = () =>
    action.run(async () => {
      const queued = await ok(api.POST('/api/v2/webhooks/subscriptions/{subscription_id}/messages/{message_id}/resend', path));
      await message.reload();
      return `${queued.message}.`;
    });

  return (
    <Page title={`Message ${messageId}`}>
      <ErrorNotice message={message.error ?? action.error} />
      <Notice>{action.notice}</Notice>
      {m && (
        <>
          <dl class="facts">
            <dt>State</dt>
            <dd>
              <Badge value={m.status} />
            </dd>
            <dt>Event</dt>
            <dd>{m.event_type}</dd>
            <dt>Order</dt>
            <dd>{m.order_id === null ? 'none (a test event)' : <a href={href(`/orders/${m.order_id}`)}>Order {m.order_id}</a>}</dd>
            <dt>Created</dt>
            <dd>
              <When at={m.created_at} />
            </dd>
            <dt>Settled</dt>
            <dd>{m.settled_at ? <When at={m.settled_at} /> : 'not yet'}</dd>
          </dl>
          {m.status !== 'pending' && (
            <div class="actions">
              <button type="button" class="primary" disabled={action.busy} onClick={() => void resend()}>
                Resend
              </button>
            </div>
          )}
          <h2 id="attempts-title">Attempts</h2>
          <table aria-labelledby="attempts-title" tabIndex={0}>
            <Head cols={[['Attempt', 'num'], 'Time', 'Result', ['Duration', 'num'], 'Answer (first KiB)']} />
            <tbody>
              {m.attempts.map((a) => (
                <tr key={a.attempt}>
                  <td class="num">{a.attempt}</td>
                  <td>
                    <When at={a.created_at} />
                  </td>
                  <td class="wrap">{attemptResult(a)}</td>
                  <td class="num">{a.duration_ms === null ? '' : `${a.duration_ms} ms`}</td>
                  <td class="wrap">
                    <code>{a.response_body ?? ''}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {m.attempts.length === 0 && <p>No attempt yet.</p>}
          <h2>Body sent</h2>
          <pre class="code" tabIndex={0}>
            {m.body}
          </pre>
          {m.headers && (
            <>
              <h2 id="sent-headers-title">Headers of the latest attempt</h2>
              <table aria-labelledby="sent-headers-title" tabIndex={0}>
                <tbody>
                  {Object.entries(m.headers).map(([name, value]) => (
                    <tr key={name}>
                      <th scope="row">{name}</th>
                      <td class="wrap">{value}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          )}
          <p>
            <a href={href(`/webhooks/${subscriptionId}`)}>Subscription {subscriptionId}</a>
          </p>
        </>
      )}
    </Page>
  );
}
