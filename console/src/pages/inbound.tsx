import { useEffect, useState } from 'preact/hooks';
import { ok } from '../api.ts';
import { FilterForm, queryValues } from '../components/filter-form.tsx';
import { Badge, ErrorNotice } from '../components/notice.tsx';
import { Page } from '../components/page.tsx';
import { Pager } from '../components/pager.tsx';
import { showToast } from '../components/toast.tsx';
import { When } from '../components/when.tsx';
import { href, navigate, pageOf, useLocation } from '../router.ts';
import { useSession } from '../session.ts';
import type { InboundDetail } from '../types.ts';
import { useAction, useData, usePoll } from '../use-data.ts';
import { Head } from '../components/table.tsx';

const STATES = ['received', 'processed', 'failed'] as const;
const stateOf = (v: string) => STATES.find((s) => s === v);
const PAGE_SIZE = 20;
/** After Reprocess, how often the page looks for the outcome. */
const POLL_MS = 1000;

/** Staff: the platform's webhooks as received, newest first, filterable by state. */
export function InboundListPage() {
  const { api } = useSession();
  const url = useLocation();
  const filters = queryValues(url, ['status']);
  const page = pageOf(url);
  const hooks = useData(
    () => ok(api.GET('/api/v2/admin/inbound-webhooks', { params: { query: { page, page_size: PAGE_SIZE, status: stateOf(filters.status) } } })),
    [url.search],
  );
  return (
    <Page title="Inbound webhooks">
      <FilterForm
        label="Filter inbound webhooks"
        values={filters}
        onApply={(v) => navigate(href('/inbound-webhooks', v))}
        fields={[{ name: 'status', label: 'State', type: 'select', options: STATES }]}
      />
      <ErrorNotice message={hooks.error} />
      {hooks.data && (
        <>
          <table aria-labelledby="page-title">
            <Head cols={['Webhook', 'State', 'Topic', 'Error', 'Order', 'Received']} />
            <tbody>
              {hooks.data.items.map((w) => (
                <tr key={w.id}>
                  <td>
                    <a href={href(`/inbound-webhooks/${w.id}`)}>Webhook {w.id}</a>
                  </td>
                  <td>
                    <Badge value={w.status} />
                  </td>
                  <td>{w.topic}</td>
                  <td>{w.error}</td>
                  <td>{w.order_id !== null && <a href={href(`/orders/${w.order_id}`)}>Order {w.order_id}</a>}</td>
                  <td>
                    <When at={w.received_at} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {hooks.data.items.length === 0 && <p>No webhook{filters.status ? ` in state ${filters.status}` : ''}.</p>}
          <Pager info={hooks.data} noun="webhook" hrefOf={(p) => href('/inbound-webhooks', { ...filters, page: p })} />
        </>
      )}
    </Page>
  );
}

/** The body as received: JSON indented when it is JSON, else as it came. */
function bodyText(w: InboundDetail): string {
  if (w.raw_body === null) return '';
  if (w.raw_body_encoding === 'base64') return w.raw_body;
  try {
    return JSON.stringify(JSON.parse(w.raw_body), null, 2);
  } catch {
    return w.raw_body;
  }
}

/** Staff: one platform webhook with its headers, body, outcome and error; Reprocess for a failed one. */
export function InboundPage({ id }: { id: number }) {
  const { api } = useSession();
  const hook = useData(() => ok(api.GET('/api/v2/admin/inbound-webhooks/{id}', { params: { path: { id } } })), [id]);
  const action = useAction();
  const w = hook.data;
  // After Reprocess: the processed_at the webhook had before, until an outcome newer than it is read
  // (processing can end before the page reads the webhook again, so `received` may never be seen).
  const [before, setBefore] = useState<string | null>();
  const awaiting = before !== undefined;
  usePoll(() => hook.reload(), POLL_MS, w?.status === 'received' || awaiting);
  useEffect(() => {
    if (!awaiting || !w || w.status === 'received' || w.processed_at === before) return;
    setBefore(undefined);
    // the outcome replaces "queued", so no word of the queue stays beside the new state
    showToast(w.status === 'processed' ? `Webhook ${id} is processed${w.order_id === null ? '' : `: order ${w.order_id}`}.` : `Webhook ${id} failed again: ${w.error ?? 'no reason given'}.`);
  }, [w, awaiting]);

  const reprocess = () =>
    action.run(async () => {
      const was = w?.processed_at ?? null;
      const answer = await ok(api.POST('/api/v2/admin/inbound-webhooks/{id}/reprocess', { params: { path: { id } } }));
      showToast(`${answer.message}.`);
      setBefore(was);
      await hook.reload();
      return undefined; // the toast above, before the outcome's own can replace it
    });

  return (
    <Page title={`Inbound webhook ${id}`}>
      <ErrorNotice message={hook.error} />
      {w && (
        <>
          <dl class="facts">
            <dt>State</dt>
            <dd>
              <Badge value={w.status} />
            </dd>
            {w.error && (
              <>
                <dt>Error</dt>
                <dd>{w.error}</dd>
              </>
            )}
            <dt>Order</dt>
            <dd>{w.order_id === null ? 'none yet' : <a href={href(`/orders/${w.order_id}`)}>Order {w.order_id}</a>}</dd>
            <dt>Platform webhook id</dt>
            <dd>{w.webhook_id}</dd>
            <dt>Topic</dt>
            <dd>{w.topic}</dd>
            <dt>Shop</dt>
            <dd>{w.shop_domain}</dd>
            <dt>Received</dt>
            <dd>
              <When at={w.received_at} />
            </dd>
            <dt>Processed</dt>
            <dd>{w.processed_at ? <When at={w.processed_at} /> : awaiting ? 'being processed again' : 'not yet'}</dd>
          </dl>
          {w.status === 'failed' && !awaiting && (
            <div class="actions">
              <button type="button" class="primary" disabled={action.busy} onClick={() => void reprocess()}>
                Reprocess
              </button>
            </div>
          )}
          <ErrorNotice message={action.error} />
          <h2 id="headers-title">Headers</h2>
          <table aria-labelledby="headers-title">
            <tbody>
              {Object.entries(w.headers).map(([name, value]) => (
                <tr key={name}>
                  <th scope="row">{name}</th>
                  <td>{value}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <h2>Body</h2>
          {w.raw_body === null ? (
            <p>
              The body was removed by the retention purge <When at={w.payload_purged_at} />.
            </p>
          ) : (
            <>
              {w.raw_body_encoding === 'base64' && <p>The body is not UTF-8 text; here are its bytes in base64.</p>}
              <pre class="code" tabIndex={0}>
                {bodyText(w)}
              </pre>
            </>
          )}
        </>
      )}
    </Page>
  );
}
